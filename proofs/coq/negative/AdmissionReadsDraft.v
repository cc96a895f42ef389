(* Deliberately wrong variant (must fail): Appendix A's global search, which reads x_1 before
   admitting it, claimed lossless with the proof of T5a_contrast's causal half.  The script
   stops at its first line: [causal global_search] is false (x_1 = A is admitted, B is not). *)
(* expect: line 13, characters 0-58: Error: No applicable tactic. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum rat.
From Specproof Require Import Step Round Lookahead.
Import GRing.Theory Num.Theory Order.TTheory.

Local Open Scope ring_scope.

Theorem global_search_lossless y : first_token global_search y = pA y.
Proof.
have cA : causal global_search by move=> [|[] [|z s]] x x'.
have bA : bounded 2 global_search by move=> [|[] [|z [|w s]]] x.
rewrite /first_token -[[:: y]]/(rcons [::] y).
rewrite (round_stopped (l := 2)) //=; [|exact: dists_P|exact: dists_Q].
by rewrite subr0 (round_total (l := 2)) ?mul1r //; [exact: dists_P | exact: dists_Q].
Qed.
