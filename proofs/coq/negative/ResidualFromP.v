(* Deliberately wrong variant (must fail): T1 part 1 with the rejected draft replaced by a
   draw from p instead of norm(max(0, p - q)), proved with T1_one_step's script.  It is false
   (Lookahead.T1_residual_from_p_biased: 3/4 instead of 1/2), so no script can close it. *)
(* expect: line 17, characters 0-76: Error: The LHS of sum_excess *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From mathcomp Require Import ring.
From Specproof Require Import Step.
Import GRing.Theory Num.Theory Order.TTheory.

Local Open Scope ring_scope.

Theorem residual_from_p_lossless (R : realFieldType) (V : finType) (p q : V -> R) :
  dist p -> dist q -> beta p q != 1 -> forall y, step_law p q p y = p y.
Proof.
move=> dp dq bn1 y.
have pos : 0 < 1 - beta p q by rewrite subr_gt0 lt_neqAle bn1 beta_le1.
rewrite step_law_split // reject_beta // /resid sum_excess // excess_overlap.
rewrite mulrCA divff ?mulr1 ?lt0r_neq0 //.
by rewrite addrC subrK.
Qed.
