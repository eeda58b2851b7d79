// Package flagvalue is the grammar of a command line's values and the
// words for what is wrong with them: whole numbers read in base 10 and
// bounded by their flag's range as they are parsed (Strict, Range),
// finite numbers, durations (Duration) and memory sizes (Size) as srun
// and GNU parallel read them, a word flag given an empty value (Empty),
// and pflag's parse errors said in words, with the flag that was likely
// meant (Explain), and a flag found among a command line's words as
// given (Given). It wires no flag: the program registers its flags
// and its ranges, and turns these errors into its usage errors.
package flagvalue
