"""The Kokoro-82M text-to-speech container: a Starlette ASGI app over an ONNX Runtime engine."""
