"""The real servers on loopback, the real model, the real clients."""
