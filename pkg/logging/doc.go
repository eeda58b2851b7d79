// Package logging is gpulaunch's own log on stderr: the two formats
// --log-format names (console, a human line with the message only; json,
// zap's production encoding with every field) and the level -v and -q
// choose. It writes nothing itself: the program hands it the writer.
package logging
