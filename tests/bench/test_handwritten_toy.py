"""ctest HandwrittenToy.SameLossesAsTrainStep: bench/handwritten_toy against bench/train_step --size
toy: after --steps 30 --warmup 0, loss_first must agree to 1e-6 and loss_last to 1e-4 relative
(float32 summation order differs).

    python3 tests/bench/test_handwritten_toy.py build/bench/train_step build/bench/handwritten_toy
"""
import json
import subprocess
import sys

ARGS = ["--size", "toy", "--steps", "30", "--warmup", "0", "--json"]


def run(exe):
    out = subprocess.run([exe] + ARGS, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ref, hand = run(sys.argv[1]), run(sys.argv[2])
    for key in ("V", "T", "d", "h", "B", "n_params"):
        if ref[key] != hand[key]:
            sys.exit(f"FAIL: {key} is {hand[key]} by hand, {ref[key]} in train_step")
    first = abs(hand["loss_first"] - ref["loss_first"])
    last = abs(hand["loss_last"] - ref["loss_last"]) / abs(ref["loss_last"])
    print(f"loss_first: train_step {ref['loss_first']:.5f}, by hand {hand['loss_first']:.5f}, |diff| {first:.2e} (limit 1e-6)")
    print(f"loss_last:  train_step {ref['loss_last']:.5f}, by hand {hand['loss_last']:.5f}, rel diff {last:.2e} (limit 1e-4)")
    if first > 1e-6 or last > 1e-4:
        sys.exit("FAIL: the hand-written step does not follow train_step")
    print("OK")


if __name__ == "__main__":
    main()
