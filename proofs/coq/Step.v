(* T1 part 1 (one step of the chain rule) and T7 part 2 (per-step acceptance = 1 - TV).
   Over any realFieldType R (rationals, reals, ...) and any finite vocabulary V. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From mathcomp Require Import ring.
Import GRing.Theory Num.Theory Order.TTheory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Step.
Variable R : realFieldType.
Variable V : finType.
Implicit Types (p q r : V -> R) (x y : V).

(* A probability vector on V: non-negative entries summing to 1. *)
Definition dist p := (forall x, 0 <= p x) /\ \sum_x p x = 1.

(* Acceptance probability of a draft x ~ q: min(1, p(x)/q(x)).  In a field x / 0 = 0, so
   the value at q(x) = 0 is 0; such an x is drawn with probability 0. *)
Definition ratio p q x := Num.min 1 (p x / q x).
(* min(p, q) pointwise, its mass beta = 1 - TV(p, q), and TV itself. *)
Definition overlap p q x := Num.min (p x) (q x).
Definition beta p q := \sum_x overlap p q x.
Definition tv p q := 2^-1 * \sum_x `|p x - q x|.
(* The residual norm(max(0, p - q)); it is the zero vector (x / 0 = 0) when p = q. *)
Definition excess p q x := Num.max 0 (p x - q x).
Definition resid p q y := excess p q y / \sum_x excess p q x.
(* Probability that a draft is rejected. *)
Definition reject p q := \sum_x q x * (1 - ratio p q x).
(* Probability that a draft is accepted. *)
Definition accept p q := \sum_x q x * ratio p q x.
(* Law of the emitted token: draw x ~ q, keep it with probability ratio, else draw from r. *)
Definition step_law p q r y :=
  \sum_x q x * (ratio p q x * (x == y)%:R + (1 - ratio p q x) * r y).

Lemma sum_pick (F : V -> R) y : \sum_x F x * (x == y)%:R = F y.
Proof.
rewrite (bigD1 y) //= eqxx mulr1 big1 ?addr0 // => x /negbTE ->.
by rewrite mulr0.
Qed.

Lemma ratio_overlap p q x : 0 <= p x -> 0 <= q x -> q x * ratio p q x = overlap p q x.
Proof.
move=> p0 q0; rewrite /ratio /overlap.
have [->|qn0] := eqVneq (q x) 0; first by rewrite mul0r min_r.
by rewrite minr_pmulr // mulr1 [q x * _]mulrC divfK // minC.
Qed.

Lemma overlap_le p q x : overlap p q x <= p x.
Proof. by rewrite /overlap le_minl lexx. Qed.

Lemma excess_overlap p q x : excess p q x = p x - overlap p q x.
Proof.
rewrite /excess /overlap; case: (leP (p x) (q x)) => h.
  by rewrite max_l ?subr_le0 // subrr.
by rewrite max_r // subr_ge0 ltW.
Qed.

Section Dists.
Variables p q : V -> R.
Hypotheses (dp : dist p) (dq : dist q).

Lemma accept_beta : accept p q = beta p q.
Proof.
by apply: eq_bigr => x _; rewrite ratio_overlap //; [case: dp | case: dq].
Qed.

Lemma reject_beta : reject p q = 1 - beta p q.
Proof.
rewrite /reject (eq_bigr (fun x => q x - q x * ratio p q x)); last first.
  by move=> x _; rewrite mulrBr mulr1.
by rewrite sumrB (proj2 dq) -/(accept p q) accept_beta.
Qed.

Lemma sum_excess : \sum_x excess p q x = 1 - beta p q.
Proof.
rewrite -(proj2 dp) /beta -sumrB.
by apply: eq_bigr => x _; rewrite excess_overlap.
Qed.

Lemma beta_le1 : beta p q <= 1.
Proof. by rewrite -(proj2 dp); apply: ler_sum => x _; apply: overlap_le. Qed.

Lemma beta1_overlap : beta p q = 1 -> forall x, overlap p q x = p x.
Proof.
move=> b1 x; apply/eqP; rewrite eq_sym -subr_eq0; apply/eqP.
have h : \sum_x (p x - overlap p q x) = 0.
  by rewrite sumrB -/(beta p q) b1 (proj2 dp) subrr.
apply: (psumr_eq0P _ h) => // i _.
by rewrite subr_ge0 overlap_le.
Qed.

Lemma step_law_split r y : step_law p q r y = overlap p q y + reject p q * r y.
Proof.
rewrite /step_law (eq_bigr _ (fun x _ => mulrDr _ _ _)) big_split /=.
rewrite /reject mulr_suml; congr (_ + _).
  rewrite -(sum_pick (overlap p q) y); apply: eq_bigr => x _.
  by rewrite mulrA ratio_overlap //; [case: dp | case: dq].
by apply: eq_bigr => x _; rewrite mulrA.
Qed.

Lemma min_half_abs (a b : R) : Num.min a b = 2^-1 * (a + b - `|a - b|).
Proof.
case: (leP a b) => h.
  rewrite distrC ger0_norm ?subr_ge0 //.
  by field.
rewrite ger0_norm ?subr_ge0 ?ltW //.
by field.
Qed.

Lemma beta_tv : beta p q = 1 - tv p q.
Proof.
rewrite /beta /tv (eq_bigr _ (fun x _ => min_half_abs (p x) (q x))) -mulr_sumr.
rewrite !sumrB !big_split /= (proj2 dp) (proj2 dq).
rewrite mulrBr; congr (_ - _); by field.
Qed.

(* T1 part 1.  The case split on 1 - TV(p, q) = 1 (= beta, [beta_tv]) is part of the statement:
   - beta = 1: a rejection has probability 0 and the law is p whatever residual r is used
     (the undefined residual is never used);
   - beta <> 1: rejections happen, the residual norm(max(0, p - q)) is well defined (its
     normaliser 1 - beta is positive) and the law is p. *)
Theorem T1_one_step :
  if 1 - tv p q == 1 then reject p q = 0 /\ (forall r y, step_law p q r y = p y)
  else 0 < reject p q /\ 0 < \sum_x excess p q x /\
       (forall y, step_law p q (resid p q) y = p y).
Proof.
rewrite -beta_tv; have [b1|bn1] := eqVneq (beta p q) 1.
  have rej0 : reject p q = 0 by rewrite reject_beta b1 subrr.
  split=> // r y; by rewrite step_law_split rej0 mul0r addr0 beta1_overlap.
have pos : 0 < 1 - beta p q.
  by rewrite subr_gt0 lt_neqAle bn1 beta_le1.
rewrite reject_beta sum_excess; do !split => //.
move=> y; rewrite step_law_split reject_beta /resid sum_excess excess_overlap.
rewrite mulrCA divff ?mulr1 ?lt0r_neq0 //.
by rewrite addrC subrK.
Qed.

(* The rule as written (residual norm(max(0, p - q)), with x / 0 = 0) emits p's law. *)
Corollary T1_one_step_law y : step_law p q (resid p q) y = p y.
Proof.
by move: T1_one_step; case: (1 - tv p q == 1) => [[_ ->]|[_ [_ ->]]].
Qed.

(* T7 part 2: a draft is accepted with probability sum_x min(p, q)(x) = 1 - TV(p, q). *)
Theorem T7_accept_tv : accept p q = beta p q /\ beta p q = 1 - tv p q.
Proof.
by split; [exact: accept_beta | exact: beta_tv].
Qed.

End Dists.

(* p = q: 1 - TV = 1, so T1_one_step takes its first branch (no rejection). *)
Corollary T1_one_step_same p : dist p -> 1 - tv p p = 1 /\ reject p p = 0.
Proof.
move=> dp; have b1 : beta p p = 1.
  by rewrite /beta -(proj2 dp); apply: eq_bigr => x _; rewrite /overlap minxx.
by rewrite -beta_tv // reject_beta // b1 subrr.
Qed.

End Step.
