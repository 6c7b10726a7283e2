"""Pure and in-process tests: no server, no model; the fast tier."""
