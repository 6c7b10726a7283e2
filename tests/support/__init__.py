"""What the tests share: helpers, stand-ins and fakes (never test modules)."""
