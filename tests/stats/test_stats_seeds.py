import numpy as np

from fire_exp.stats import child_rng, child_seed_sequence, stable_hash32


def test_stable_and_distinct():
    assert stable_hash32("real - sham") == 3504849607
    assert child_rng(1, "a", "b").random() == child_rng(1, "a", "b").random()
    assert child_rng(1, "a", "b").random() != child_rng(1, "a", "c").random()
    assert child_rng(1, "a").random() != child_rng(2, "a").random()


def test_spawn_key_is_hashes():
    ss = child_seed_sequence(5, "x", "y")
    assert ss.entropy == 5 and ss.spawn_key == (stable_hash32("x"), stable_hash32("y"))
    assert isinstance(child_rng(5, "x"), np.random.Generator)
