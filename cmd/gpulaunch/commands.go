package main

import (
	"github.com/spf13/pflag"
)

// Every command's flag set is built by one function, which the command
// itself calls; commandFlagSets hands them out by name, so that the CLI
// contract table (contract_test.go) is checked against the flags each
// command really has, and a new flag without rows fails that test.

// commandFlagSets builds the flag set of every command that has flags,
// each as its command builds it (with --help, as parseFlags adds it).
// version and help take none.
func commandFlagSets() map[string]*pflag.FlagSet {
	sets := map[string]*pflag.FlagSet{
		"run":        newRunOptions().fs,
		"scale":      newScaleOptions().fs,
		"exec":       execFlagSet(new(commonFlags), new(execFlags)),
		"info":       infoFlagSet(new(commonFlags)),
		"plan":       planFlagSet(new(commonFlags), new(planFlags)),
		"status":     statusFlagSet(new(clientFlags), new(bool)),
		"top":        topFlagSet(new(clientFlags), new(string)),
		"logs":       logsFlagSet(new(clientFlags), new(bool), new(int)),
		"signal":     signalFlagSet(new(clientFlags)),
		"report":     reportFlagSet(new(string), new(string)),
		"completion": completionFlagSet(),
		"man":        manFlagSet(),
	}
	for _, fs := range sets {
		helpFlag(fs)
	}
	return sets
}

// helpFlag registers --help/-h, which every command has.
func helpFlag(fs *pflag.FlagSet) *bool { return fs.BoolP("help", "h", false, "show this help") }
