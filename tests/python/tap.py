"""Runs the unittest files of this directory and writes TAP (the test
suite's format): one line per test, skips with their reason.

    tap.py [--only FILE | --except FILE]

runs one file of them, or all but one (tests/test-python.sh runs the numba
plugin's file with another python3 where that one has numba)."""
import fnmatch
import os
import sys
import unittest


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0

    def _line(self, ok, test, extra=""):
        self.n += 1
        name = "%s.%s" % (type(test).__name__, test._testMethodName) if hasattr(test, "_testMethodName") else str(test)
        doc = test.shortDescription() if hasattr(test, "shortDescription") else None
        desc = name + (": " + doc if doc else "")
        print("%s %d - %s%s" % ("ok" if ok else "not ok", self.n, desc, extra), flush=True)

    def addSuccess(self, test):
        self._line(True, test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(False, test)
        print("# " + self._exc_info_to_string(err, test).replace("\n", "\n# "), flush=True)

    def addError(self, test, err):
        super().addError(test, err)
        self._line(False, test)
        print("# " + self._exc_info_to_string(err, test).replace("\n", "\n# "), flush=True)

    def addSkip(self, test, reason):
        self._line(True, test, " # SKIP " + reason)

    def addExpectedFailure(self, test, err):
        self._line(True, test, " # TODO expected failure")

    def addUnexpectedSuccess(self, test):
        self._line(False, test, " (unexpected success)")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:]
    pattern, skip = "test_*.py", None
    if len(args) == 2 and args[0] == "--only":
        pattern = args[1]
    elif len(args) == 2 and args[0] == "--except":
        skip = args[1]
    elif args:
        print("usage: tap.py [--only FILE | --except FILE]", file=sys.stderr)
        return 2
    suite = unittest.TestSuite()
    for name in sorted(os.listdir(here)):
        if fnmatch.fnmatch(name, pattern) and fnmatch.fnmatch(name, "test_*.py") and name != skip:
            suite.addTests(unittest.defaultTestLoader.discover(here, pattern=name, top_level_dir=here))
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult()
    suite.run(result)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
