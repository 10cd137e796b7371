"""What the tests share: fakes, the real parts' starters, the measure oracle."""
