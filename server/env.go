package server

import "fmt"

// LookupEnv returns the variable that sets s and its text: Env, or else OldEnv. An empty
// variable counts as unset. lookupEnv is os.LookupEnv or a stand-in for it.
func (s Setting) LookupEnv(lookupEnv func(string) (string, bool)) (name, text string, ok bool) {
	for _, name := range []string{s.Env, s.OldEnv} {
		if name == "" {
			continue
		}
		if v, set := lookupEnv(name); set && v != "" {
			return name, v, true
		}
	}
	return "", "", false
}

// LoadEnv sets every setting whose variable is set (see Setting.LookupEnv) the way `baton
// serve` reads them, leaving the others as they are: a program embedding Baton starts from
// DefaultConfig, puts its own defaults in, and calls LoadEnv(os.LookupEnv). A value that does
// not parse is an error naming its variable, and leaves c unchanged.
func (c *Config) LoadEnv(lookupEnv func(string) (string, bool)) error {
	next := *c
	for _, s := range settings {
		if name, text, ok := s.LookupEnv(lookupEnv); ok {
			if err := s.value(&next).Set(text); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	*c = next
	return nil
}
