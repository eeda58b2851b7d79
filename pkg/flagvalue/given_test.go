package flagvalue

import "testing"

// Given finds the flag in each form pflag reads, only before the command;
// GivenValue reads its value back.
func TestGiven(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		flag, val string
		ok        bool
	}{
		{"two words", []string{"-G", "1", "-n", "2", "--", "app"}, "-n 2", "2", true},
		{"long, two words", []string{"--ntasks", "3"}, "--ntasks 3", "3", true},
		{"long=value", []string{"--ntasks=4"}, "--ntasks=4", "4", true},
		{"short joined", []string{"-n5"}, "-n5", "5", true},
		{"last word, no value", []string{"-n"}, "-n", "", true},
		{"after --: the command's", []string{"--", "app", "-n", "2"}, "", "", false},
		{"another long flag", []string{"--node-file", "x"}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flag, ok := Given(tc.args, "-n", "--ntasks")
			if flag != tc.flag || ok != tc.ok {
				t.Fatalf("Given = %q %v, want %q %v", flag, ok, tc.flag, tc.ok)
			}
			if v := GivenValue(flag, "-n", "--ntasks"); ok && v != tc.val {
				t.Fatalf("GivenValue(%q) = %q, want %q", flag, v, tc.val)
			}
		})
	}
}
