"""The apps through their real routes in process (Starlette's test client), with a stub engine or an
in-memory TTS; the fast tier."""
