# Tests: see tests/README.md. Each entry in TESTS prints TAP.
