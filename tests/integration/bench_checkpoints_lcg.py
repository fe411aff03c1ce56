"""What tests/programs/bench_checkpoints.c computes, for tests that check
the values a recording of it shows against Python's."""


def lcg_after(rounds, inner):
    """bench_checkpoints.c's x after `rounds` calls of work(x, inner), from 1."""
    x = 1
    for _ in range(rounds):
        for i in range(inner):
            x = (x * 6364136223846793005 + i) & 0xFFFFFFFFFFFFFFFF
    return x
