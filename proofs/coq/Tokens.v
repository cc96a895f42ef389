(* T7: expected number of tokens per round of the chain rule (or of any round whose admission
   does not read the draft it decides on). *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From mathcomp Require Import ring.
From Specproof Require Import Step Round.
Import GRing.Theory Num.Theory Order.TTheory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Tokens.
Variable R : realFieldType.
Variable V : finType.
Implicit Types (P Q A : kernel R V) (s w : seq V) (x y : V).

(* E|O|: the round's expected output length, from the round's law (outputs shorter than B). *)
Definition explen B P Q A := \sum_(k < B) \sum_(t <- words V k) (size t)%:R * rlaw P Q A t.

(* P(A_1 ... A_j): the first j drafts are all verified and accepted. *)
Fixpoint accp j P Q A : R :=
  if j is j'.+1 then \sum_y go P Q A y * accp j' (sh y P) (sh y Q) (sh y A) else 1.

(* b_j = P(A_j | A_<j), 0 once the conditioning event has probability 0. *)
Definition bcond j P Q A : R :=
  if accp j.-1 P Q A == 0 then 0 else accp j P Q A / accp j.-1 P Q A.

Lemma sum_nil0 B : (0 < B)%N -> \sum_(k < B) \sum_(t <- words V k) (t == [::])%:R = 1 :> R.
Proof. by move=> B0; exact: (sum_nil R [::] B0). Qed.

Lemma explen_cons B P Q A : (0 < B)%N ->
  explen B.+1 P Q A =
  \sum_y (stop P Q A y + go P Q A y * (ext B (sh y P) (sh y Q) (sh y A) [::]
                                       + explen B (sh y P) (sh y Q) (sh y A))).
Proof.
move=> B0; rewrite /explen big_ord_recl big_seq1 /= mul0r add0r.
transitivity (\sum_(k < B) \sum_y \sum_(w <- words V k) ((size w).+1)%:R * rlaw P Q A (y :: w)).
  by apply: eq_bigr => k _; rewrite sum_words_S.
rewrite exchange_big; apply: eq_bigr => y _.
transitivity (\sum_(k < B) \sum_(w <- words V k)
   ((w == [::])%:R * stop P Q A y +
    go P Q A y * (rlaw (sh y P) (sh y Q) (sh y A) w
                  + (size w)%:R * rlaw (sh y P) (sh y Q) (sh y A) w))).
  apply: eq_bigr => k _; apply: eq_bigr => w _.
  rewrite rlaw_cons mulrS; case: w => [|z w] /=; first by rewrite mulr0 !mul0r; ring.
  by ring.
set r := rlaw (sh y P) (sh y Q) (sh y A).
rewrite (eq_bigr (fun k : 'I_B => (\sum_(w <- words V k) (w == [::])%:R) * stop P Q A y +
   go P Q A y * \sum_(w <- words V k) (r w + (size w)%:R * r w))); last first.
  by move=> k _; rewrite big_split /= -mulr_suml -mulr_sumr.
rewrite big_split /= -mulr_suml -mulr_sumr sum_nil0 // mul1r.
congr (_ + go P Q A y * _).
rewrite (eq_bigr (fun k : 'I_B => \sum_(w <- words V k) r w + \sum_(w <- words V k) (size w)%:R * r w)); last first.
  by move=> k _; rewrite big_split.
by rewrite big_split.
Qed.

(* T7 part 1: E|O| = 1 + sum_{j=1..l} P(A_1 ... A_j). *)
Theorem T7_expected_tokens l B P Q A : dists P -> dists Q -> causal A -> bounded l A ->
  (l.+2 <= B)%N -> explen B P Q A = \sum_(j < l.+1) accp j P Q A.
Proof.
elim: l B P Q A => [|l IH] [//|B] P Q A dP dQ cA bA lB;
  have B0 : (0 < B)%N by case: (B) lB.
all: rewrite explen_cons //.
  rewrite big_ord_recl big_ord0 addr0 /= -(proj2 (dP [::])); apply: eq_bigr => y _.
  rewrite -(@stop_go _ _ P Q A y (dP [::]) (dQ [::])); last by move=> x x'; apply: cA.
  by rewrite bounded0_go // mul0r !addr0.
have hy y : (ext B (sh y P) (sh y Q) (sh y A) [::] = 1) /\ (explen B (sh y P) (sh y Q) (sh y A) = \sum_(j < l.+1) accp j (sh y P) (sh y Q) (sh y A)).
  have h1 : dists (sh y P) by apply: dists_sh.
  have h2 : dists (sh y Q) by apply: dists_sh.
  have h3 : causal (sh y A) by apply: causal_sh.
  have h4 : bounded l (sh y A) by apply: (bounded_sh y bA).
  by split; [apply: (round_total (l := l)) | apply: IH].
rewrite (eq_bigr (fun y => (stop P Q A y + go P Q A y) +
                            go P Q A y * \sum_(j < l.+1) accp j (sh y P) (sh y Q) (sh y A))); last first.
  by move=> y _; have [-> ->] := hy y; ring.
rewrite big_split /= (eq_bigr (fun y => P [::] y)); last first.
  by move=> y _; apply: stop_go => // x x'; apply: cA.
rewrite (proj2 (dP [::])) big_ord_recl /=; congr (_ + _).
rewrite (eq_bigr (fun y => \sum_(j < l.+1) go P Q A y * accp j (sh y P) (sh y Q) (sh y A))); last first.
  by move=> y _; rewrite mulr_sumr.
by rewrite exchange_big.
Qed.

(* The product form: P(A_1 ... A_j) = b_1 ... b_j with b_i = P(A_i | A_<i) (0 once the
   conditioning event is null), when verified positions are accepted with probability <= 1. *)
Lemma accp_le j P Q A : dists P -> dists Q -> (forall s x, 0 <= A s x <= 1) ->
  0 <= accp j.+1 P Q A <= accp j P Q A.
Proof.
elim: j P Q A => [|j IH] P Q A dP dQ hA.
  rewrite /= (eq_bigr (fun y => go P Q A y)); last by move=> y _; rewrite mulr1.
  apply/andP; split.
    apply: sumr_ge0 => y _; rewrite /go !mulr_ge0 //; first by case: (dQ [::]).
      by case/andP: (hA [::] y).
    by rewrite /ratio le_minr ler01 divr_ge0 //; [case: (dP [::]) | case: (dQ [::])].
  rewrite -(proj2 (dQ [::])); apply: ler_sum => y _.
  rewrite /go -mulrA ler_pimulr //; first by case: (dQ [::]).
  rewrite mulr_ile1 //; first by case/andP: (hA [::] y).
  - by rewrite /ratio le_minr ler01 divr_ge0 //; [case: (dP [::]) | case: (dQ [::])].
  - by case/andP: (hA [::] y).
  - by rewrite /ratio le_minl lexx.
have hs y : 0 <= accp j.+1 (sh y P) (sh y Q) (sh y A) <= accp j (sh y P) (sh y Q) (sh y A).
  by apply: IH => [s|s|s x]; [apply: dP | apply: dQ | apply: hA].
have g0 y : 0 <= go P Q A y.
  rewrite /go !mulr_ge0 //; first by case: (dQ [::]).
    by case/andP: (hA [::] y).
  by rewrite /ratio le_minr ler01 divr_ge0 //; [case: (dP [::]) | case: (dQ [::])].
rewrite [accp j.+2 _ _ _]/= [accp j.+1 _ _ _]/=; apply/andP; split.
  by apply: sumr_ge0 => y _; rewrite mulr_ge0 //; case/andP: (hs y).
by apply: ler_sum => y _; rewrite ler_wpmul2l //; case/andP: (hs y).
Qed.

Theorem T7_product j P Q A : dists P -> dists Q -> (forall s x, 0 <= A s x <= 1) ->
  accp j P Q A = \prod_(1 <= i < j.+1) bcond i P Q A.
Proof.
move=> dP dQ hA; elim: j => [|j IH]; first by rewrite big_geq.
rewrite big_nat_recr //= -IH /bcond /=.
have [a0|an0] := eqVneq (accp j P Q A) 0.
  have := accp_le j dP dQ hA; rewrite a0 => h.
  by rewrite mulr0; apply/eqP; rewrite eq_le andbC.
by rewrite mulrCA divff // mulr1.
Qed.

(* T7 part 3, the i.i.d. case: every verified position has acceptance 1 - TV = b. *)
Lemma accp_iid j P Q b :
  (forall s, (size s < j)%N -> \sum_x Q s x * ratio (P s) (Q s) x = b) ->
  forall A, (forall s x, (size s < j)%N -> A s x = 1) -> accp j P Q A = b ^+ j.
Proof.
elim: j P Q => [|j IH] P Q hb A hA; first by rewrite expr0.
rewrite /= (eq_bigr (fun y => go P Q A y * b ^+ j)); last first.
  move=> y _; rewrite IH // => [s|s x] h; [exact: (hb (y :: s)) | exact: (hA (y :: s))].
rewrite -mulr_suml exprS; congr (_ * _).
rewrite -(hb [::]) //; apply: eq_bigr => y _.
by rewrite /go hA // mulr1.
Qed.

Lemma geometric (b : R) (n : nat) : (\sum_(j < n) b ^+ j) * (1 - b) = 1 - b ^+ n.
Proof.
elim: n => [|n IH]; first by rewrite big_ord0 expr0 subrr mul0r.
by rewrite big_ord_recr /= mulrDl IH exprS; ring.
Qed.

Theorem T7_iid l B P Q b : dists P -> dists Q -> (l.+2 <= B)%N ->
  (forall s, (size s < l)%N -> 1 - tv (P s) (Q s) = b) ->
  explen B P Q (@chain_adm R V l) = \sum_(j < l.+1) b ^+ j
  /\ (b != 1 -> explen B P Q (@chain_adm R V l) = (1 - b ^+ l.+1) / (1 - b)
                /\ 1 / (1 - b) - explen B P Q (@chain_adm R V l) = b ^+ l.+1 / (1 - b)).
Proof.
move=> dP dQ lB hb.
have e : explen B P Q (@chain_adm R V l) = \sum_(j < l.+1) b ^+ j.
  rewrite (T7_expected_tokens (l := l)) //; last exact: chain_bounded.
  apply: eq_bigr => [[j ltj]] _ /=; apply: accp_iid => [s h|s x h].
    have [e1 e2] := T7_accept_tv (dP s) (dQ s).
    by rewrite -/(accept _ _) e1 e2 hb // (leq_trans h _).
  by rewrite /chain_adm (leq_trans h _).
split => // bn1; rewrite e.
have n0 : 1 - b != 0 by rewrite subr_eq0 eq_sym.
have g := geometric b l.+1.
have h1 : \sum_(j < l.+1) b ^+ j = (1 - b ^+ l.+1) / (1 - b) by rewrite -g mulfK.
split => //; rewrite h1; field; exact: n0.
Qed.

(* The checked instances: b = 0.85 gives 1.85 tokens for one draft and the limit 20/3. *)
Corollary T7_iid_085 l B P Q : dists P -> dists Q -> (l.+2 <= B)%N ->
  (forall s, (size s < l)%N -> 1 - tv (P s) (Q s) = 17%:R / 20%:R) ->
  explen B P Q (@chain_adm R V l) = 20%:R / 3%:R * (1 - (17%:R / 20%:R) ^+ l.+1)
  /\ (l = 1%N -> explen B P Q (@chain_adm R V l) = 37%:R / 20%:R).
Proof.
move=> dP dQ lB hb.
have b1 : (17%:R / 20%:R : R) != 1.
  apply/eqP => h; have : (17%:R : R) = 20%:R.
    by rewrite -[LHS](@divfK _ 20%:R) ?h ?mul1r // pnatr_eq0.
  by move/eqP; rewrite eqr_nat.
have [e /(_ b1) [h1 _]] := T7_iid dP dQ lB hb.
split; first by rewrite h1; move: (_ ^+ l.+1) => t; field.
move=> l1; subst l; rewrite e !big_ord_recl big_ord0 /= expr0 expr1.
by field.
Qed.

End Tokens.
