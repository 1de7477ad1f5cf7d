package main

import "net/http"

// consoleHandler serves the embedded admin console; nil until the SPA is built in.
func consoleHandler() http.Handler { return nil }
