"""``python -m tts_server``: the TTS container's entry point (``tts_server.cli``)."""

import sys

from tts_server.cli import main

sys.exit(main())
