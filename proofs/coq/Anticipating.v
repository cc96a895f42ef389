(* T5(b): an admission that reads the draft it decides on.  At the round's first position, with
   p = P [::], q = Q [::] and alpha(x) = A [::] x the probability that the position is verified
   when x_1 = x, the first token's law is
     alpha(y) m(y) + r(y) sum_x alpha(x) (q(x) - m(x)) + (1 - alpha_bar) p(y),
   m = min(p, q), alpha_bar = sum_x q(x) alpha(x); when p = q it is exact iff alpha is constant
   on the support of q; a one-hot p is emitted exactly whatever alpha is. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From mathcomp Require Import ring.
From Specproof Require Import Step Round.
Import GRing.Theory Num.Theory Order.TTheory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Anticipating.
Variable R : realFieldType.
Variable V : finType.
Implicit Types (P Q A : kernel R V) (x y : V).

(* The first token's law when the rest of the round does not read the drafts it decides on. *)
Lemma first_token_law B l P Q A y : dists P -> dists Q -> (l.+2 <= B)%N ->
  causal (sh y A) -> bounded l (sh y A) ->
  ext B P Q A [:: y] = stop P Q A y + go P Q A y.
Proof.
move=> dP dQ lB cA bA; rewrite ext_cons; last by case: (B) lB.
by rewrite eqxx mul1r (round_total (l := l)) ?mulr1 //; exact: dists_sh.
Qed.

Theorem T5b_formula P Q A y : dists P -> dists Q ->
  stop P Q A y + go P Q A y =
  A [::] y * overlap (P [::]) (Q [::]) y
  + resid (P [::]) (Q [::]) y * (\sum_x A [::] x * (Q [::] x - overlap (P [::]) (Q [::]) x))
  + (1 - \sum_x Q [::] x * A [::] x) * P [::] y.
Proof.
move=> dP dQ; have [p0 _] := dP [::]; have [q0 sq] := dQ [::].
rewrite /stop /go.
rewrite (eq_bigr (fun x => A [::] x * (Q [::] x - overlap (P [::]) (Q [::]) x))); last first.
  by move=> x _; rewrite -(ratio_overlap (p0 x) (q0 x)); ring.
rewrite [\sum_x Q [::] x * (1 - A [::] x)](eq_bigr (fun x => Q [::] x - Q [::] x * A [::] x)); last by move=> x _; ring.
rewrite sumrB sq [Q [::] y * _ * _]mulrAC (ratio_overlap (p0 y) (q0 y)).
set S1 := (\sum_x A [::] x * _); set S2 := (\sum_x Q [::] x * A [::] x); ring.
Qed.

Theorem T5b_same P Q A : dists P -> dists Q -> P [::] = Q [::] ->
  (forall y, stop P Q A y + go P Q A y = Q [::] y * (1 + A [::] y - \sum_x Q [::] x * A [::] x))
  /\ ((forall y, stop P Q A y + go P Q A y = Q [::] y) <->
      (forall y, Q [::] y != 0 -> A [::] y = \sum_x Q [::] x * A [::] x)).
Proof.
move=> dP dQ epq.
have mq x : overlap (P [::]) (Q [::]) x = Q [::] x by rewrite /overlap epq minxx.
have law y : stop P Q A y + go P Q A y =
             Q [::] y * (1 + A [::] y - \sum_x Q [::] x * A [::] x).
  rewrite T5b_formula // (eq_bigr (fun x => 0)); last by move=> x _; rewrite mq subrr mulr0.
  rewrite big1_eq mulr0 addr0 mq epq.
  by set S := (\sum_x Q [::] x * A [::] x); ring.
split => //; split => h y.
  move=> qn0; have := h y; rewrite law -{2}[Q [::] y]mulr1 => /(mulfI qn0) e.
  apply/eqP; rewrite -subr_eq0; apply/eqP.
  transitivity ((1 + A [::] y - \sum_x Q [::] x * A [::] x) - 1).
    by set S := (\sum_x _); ring.
  by rewrite e subrr.
rewrite law; have [->|qn0] := eqVneq (Q [::] y) 0; first by rewrite mul0r.
by rewrite -(h y qn0) addrK mulr1.
Qed.

(* T5(b), "not for every target": a one-hot target is emitted exactly whatever the admission. *)
Theorem T5b_one_hot P Q A t : dists Q -> (forall s x, P s x = (x == t)%:R) ->
  forall y, stop P Q A y + go P Q A y = P [::] y.
Proof.
move=> dQ hP y.
have dP : dists P.
  move=> s; split => [x|]; first by rewrite hP ler0n.
  by rewrite (eq_bigr (fun x => 1 * (x == t)%:R)) ?sum_pick // => x _; rewrite hP mul1r.
have [q0 sq] := dQ [::]; set q := Q [::] in q0 sq *.
have qt1 : q t <= 1.
  by rewrite -sq (bigD1 t) //= ler_addl sumr_ge0.
have m x : overlap (P [::]) q x = q t * (x == t)%:R.
  rewrite /overlap hP; have [->|ne] := eqVneq x t; first by rewrite mulr1 min_r.
  by rewrite mulr0 min_l.
rewrite T5b_formula // -/q hP.
set abar := \sum_x q x * A [::] x.
have S : \sum_x A [::] x * (q x - overlap (P [::]) q x) = abar - A [::] t * q t.
  rewrite (eq_bigr (fun x => q x * A [::] x - (A [::] t * q t) * (x == t)%:R)).
    by rewrite sumrB sum_pick.
  move=> x _; rewrite m; have [->|ne] := eqVneq x t; first by rewrite !mulr1; ring.
  by rewrite !mulr0 !subr0 mulrC.
rewrite S m.
have [e1|n1] := eqVneq (q t) 1.
  have qx0 x : x != t -> q x = 0.
    move=> ne; have h : \sum_(i | i != t) q i = 0.
      have := sq; rewrite (bigD1 t) //= e1 => e.
      by apply: (@addrI _ 1); rewrite addr0.
    exact: (psumr_eq0P (fun i _ => q0 i) h).
  have ab : abar = A [::] t.
    rewrite /abar (bigD1 t) //= e1 mul1r big1 ?addr0 // => x ne.
    by rewrite qx0 ?mul0r.
  rewrite ab e1 mulr1 subrr mulr0 addr0; have [->|ne] := eqVneq y t; last by rewrite !mulr0 addr0.
  by rewrite !mulr1 addrC subrK.
have pos : 1 - q t != 0 by rewrite subr_eq0 eq_sym.
have r : resid (P [::]) q y = (y == t)%:R.
  have ex x : excess (P [::]) q x = (1 - q t) * (x == t)%:R.
    rewrite /excess hP; have [->|ne] := eqVneq x t; first by rewrite mulr1 max_r // subr_ge0.
    by rewrite mulr0 sub0r max_l // oppr_le0.
  by rewrite /resid (eq_bigr _ (fun x _ => ex x)) sum_pick ex mulrC mulKf.
rewrite r; have [->|ne] := eqVneq y t; last by rewrite !mulr0 mul0r !addr0.
have -> : (true%:R : R) = 1 by [].
by rewrite !mulr1; ring.
Qed.

End Anticipating.
