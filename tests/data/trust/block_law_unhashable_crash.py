"""Block certificate: a `law` entry whose ids are not hashable (a list, an object) or not
comparable with ints (a string) crashes check() with TypeError instead of returning a Verdict.

_check_block compares the claimed list of blocks with the tree's; on a mismatch it builds
`sorted(set(listed) ^ set(law))` for the message, which hashes and orders the claimed ids
before any of them is checked to be a token id.

Also: a law entry [true, 1] is accepted as the block [1, 1] (True == 1 in Python), so a valid
certificate may list JSON booleans as token ids.

Run: cd /work/wt-adv && PYTHONPATH=src python tests/data/trust/block_law_unhashable_crash.py
"""

import copy
import json
import time

from specproof import checker
from specproof.certify.blocks import block_verification_certificate

doc = block_verification_certificate(["1/3", "2/3"], ["2/3", "1/3"], 2)
cases = {
    "ids [[0]] (unhashable list)": [[[0]], "1/27"],
    "ids [{}] (unhashable object)": [[{}], "1/27"],
    "ids ['a'] (a string)": [["a"], "1/27"],
}
for what, entry in cases.items():
    bad = copy.deepcopy(doc)
    bad["law"][0] = entry
    start = time.perf_counter()
    try:
        verdict = checker.check(json.dumps(bad))
        print(f"{what}: {verdict!r}")
    except Exception as exc:  # check() must always return a Verdict
        print(f"{what}: CRASH {type(exc).__name__}: {exc}")
    print(f"  {time.perf_counter() - start:.3f} s")

bools = copy.deepcopy(doc)
assert bools["law"][7][0] == [1, 1]
bools["law"][7][0] = [True, 1]
print("law entry [true, 1] for the block [1, 1]:", checker.check(json.dumps(bools)))
