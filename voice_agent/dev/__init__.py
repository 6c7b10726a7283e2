"""Local stand-ins, local servers and the docs generator: what a developer runs beside the product."""
