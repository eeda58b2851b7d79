package sched

import (
	"sort"
	"strings"
)

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

// List is the environment as NAME=value entries, sorted by name: a
// stable order for what a child is started with.
func (e Env) List() []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := make([]string, 0, len(keys))
	for _, k := range keys {
		list = append(list, k+"="+e[k])
	}
	return list
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
