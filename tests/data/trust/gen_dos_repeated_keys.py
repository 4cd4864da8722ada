"""A JSON object of many keys that repeats them all (issue 18, item 3).

    python gen_dos_repeated_keys.py TARGET_KB [OUT]   (default OUT: stdout)

The object lists the keys 0 .. N (in hex) twice. Before the fix, finding the repeated keys called
``keys.count`` once per key (quadratic: 99 KB in 13-15 s); now it is one pass: MALFORMED at once.
"""

import sys


def main(argv):
    target = int(argv[1]) * 1000
    n = max(1, target // 16)  # '"1a2b":0,' twice
    text = "{" + ",".join(f'"{i % n:x}":0' for i in range(2 * n)) + "}"
    if len(argv) > 2:
        with open(argv[2], "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
