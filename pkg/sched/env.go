package sched

import "strings"

// Env is the process environment as a map, injected so that every rule
// that reads a variable runs in tests.
type Env map[string]string

// EnvFromList turns os.Environ() output into an Env.
func EnvFromList(list []string) Env {
	env := Env{}
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Lookup returns a variable and whether it is set.
func (e Env) Lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// first is the first of names that is set and not empty.
func first(env Env, names ...string) string {
	for _, n := range names {
		if v := env[n]; v != "" {
			return v
		}
	}
	return ""
}
