"""DSpark Appendix A, exactly (theorem T5 in proofs/)."""

from fractions import Fraction

from specproof.reference import Algorithm1, GlobalSearch, appendix_a, exact_law, reference_law

A, B = ((0,),), ((1,),)


def test_global_search_gives_17_20_and_3_20() -> None:
    case = appendix_a()
    law = exact_law(case.decoder(GlobalSearch()), case.prompts, case.num_tokens)
    assert law == {A: Fraction(17, 20), B: Fraction(3, 20)}


def test_break_gives_the_target_law_7_10_and_3_10() -> None:
    case = appendix_a()
    decoder = case.decoder(Algorithm1())
    law = exact_law(decoder, case.prompts, case.num_tokens)
    assert law == {A: Fraction(7, 10), B: Fraction(3, 10)}
    assert law == reference_law(decoder, case.prompts, case.num_tokens)


def test_schedules_match_the_paper_walk() -> None:
    """Theta_0 = 1 beats Theta_1 = 0.9: the break stops at l = 0; global search reaches
    Theta_2 = 1.134 when c_2 = 0.9 and stays at l = 0 when c_2 = 0."""
    sps = appendix_a().sps
    after_a = [[Fraction(4, 5), Fraction(9, 10)]]
    after_b = [[Fraction(4, 5), Fraction(0)]]
    assert Algorithm1()(after_a, sps) == [0]
    assert Algorithm1()(after_b, sps) == [0]
    assert GlobalSearch()(after_a, sps) == [2]
    assert GlobalSearch()(after_b, sps) == [0]


def test_greedy_path_carries_the_paper_thetas() -> None:
    from specproof.reference import greedy_path

    path = greedy_path([[Fraction(4, 5), Fraction(9, 10)]], appendix_a().sps)
    assert [step.theta for step in path] == [1, Fraction(9, 10), Fraction(567, 500)]
    assert [step.lengths for step in path] == [(0,), (1,), (2,)]
