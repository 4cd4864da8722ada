"""What :func:`specproof.testing.assert_lossless` passed in the running test (standard library only,
so that the pytest plugin, :mod:`specproof.trace.pytest_plugin`, reads it without importing the tracer)."""

#: One line per passing ``assert_lossless`` since the plugin last took them: the verdict and its TV.
PASSED: list[str] = []
