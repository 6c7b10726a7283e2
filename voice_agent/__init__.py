"""The ``voice-agent`` command line: run the servers, ask the agent, run the offline demo."""
