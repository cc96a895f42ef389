(* T1 parts 2 and 3: one round of the chain rule (l drafts and a bonus token) is a stopped
   target sample, and rounds composed until N tokens are emitted give the target's law.
   One definition of a round serves every admission rule: [A s x] is the probability that the
   draft x at the position after the accepted prefix s is verified; otherwise the round emits a
   bonus token from the target and stops.  The chain rule with l drafts is [chain_adm l]; T5(a)
   uses the same round with an admission that reads the draft. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From mathcomp Require Import ring.
From Specproof Require Import Step.
Import GRing.Theory Num.Theory Order.TTheory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Round.
Variable R : realFieldType.
Variable V : finType.

(* A kernel: a law on V for every prefix drafted in the round (the prefix is relative to the
   round's start; the round's context is fixed outside). *)
Definition kernel := seq V -> V -> R.
Implicit Types (P Q A : kernel) (s o t w : seq V) (x y z : V).

(* The round seen after one more accepted token y. *)
Definition sh y (F : kernel) : kernel := fun s => F (y :: s).

(* At the round's first open position, with target P [::], drafter Q [::], admission A [::]:
   [go y]: y is drafted, verified and accepted (the round goes on);
   [stop y]: the round ends by emitting y, from the residual after a rejection or as the
   bonus token when the position is not verified. *)
Definition go P Q A y := Q [::] y * A [::] y * ratio (P [::]) (Q [::]) y.
Definition stop P Q A y :=
  (\sum_x Q [::] x * A [::] x * (1 - ratio (P [::]) (Q [::]) x)) * resid (P [::]) (Q [::]) y
  + (\sum_x Q [::] x * (1 - A [::] x)) * P [::] y.

(* The law of the round's output o (accepted drafts, then the token that ends the round). *)
Fixpoint rlaw P Q A o : R :=
  match o with
  | [::] => 0
  | y :: o' => if o' is [::] then stop P Q A y else go P Q A y * rlaw (sh y P) (sh y Q) (sh y A) o'
  end.

(* Every word of length k. *)
Fixpoint words k : seq (seq V) :=
  if k is k'.+1 then flatten [seq [seq y :: w | w <- words k'] | y <- enum V] else [:: [::]].

(* P(O extends s): the mass of the outputs s ++ t, t of length < B.  With B >= l + 2 this
   counts every output of a round of at most l verified drafts. *)
Definition ext B P Q A s := \sum_(k < B) \sum_(t <- words k) rlaw P Q A (s ++ t).

(* Hypotheses on a round. *)
Definition dists P := forall s, dist (P s).
(* Non-anticipating: the admission of a position does not read its draft. *)
Definition causal A := forall s x x', A s x = A s x'.
(* At most l positions are verified. *)
Definition bounded l A := forall s x, (l <= size s)%N -> A s x = 0.
(* The chain rule with l drafts: verify every position before the l-th. *)
Definition chain_adm l : kernel := fun s _ => (size s < l)%:R.

Lemma sum_words_S (F : seq V -> R) k :
  \sum_(w <- words k.+1) F w = \sum_y \sum_(w <- words k) F (y :: w).
Proof.
rewrite /= big_flatten /= big_map big_enum /=.
by apply: eq_bigr => y _; rewrite big_map.
Qed.

Lemma rlaw_cons P Q A y o :
  rlaw P Q A (y :: o) = (o == [::])%:R * stop P Q A y + go P Q A y * rlaw (sh y P) (sh y Q) (sh y A) o.
Proof. by case: o => [|z o] /=; rewrite ?mul1r ?mulr0 ?addr0 ?mul0r ?add0r. Qed.

Lemma sum_nil B s : (0 < B)%N ->
  \sum_(k < B) \sum_(t <- words k) ((s ++ t) == [::])%:R = (s == [::])%:R :> R.
Proof.
case: B => // B _; rewrite big_ord_recl /= big_cons big_nil cats0 addr0.
rewrite big1 ?addr0 // => k _; rewrite sum_words_S big1 // => y _.
by rewrite big1 // => w _; case: s.
Qed.

Lemma ext_cons B P Q A y s : (0 < B)%N ->
  ext B P Q A (y :: s) =
  (s == [::])%:R * stop P Q A y + go P Q A y * ext B (sh y P) (sh y Q) (sh y A) s.
Proof.
move=> B0; rewrite /ext -(sum_nil s B0) mulr_suml mulr_sumr -big_split /=.
apply: eq_bigr => k _; rewrite mulr_suml mulr_sumr -big_split /=.
by apply: eq_bigr => t _; exact: (rlaw_cons P Q A y (s ++ t)).
Qed.

Lemma ext_nil B P Q A : ext B.+1 P Q A [::] = \sum_y ext B P Q A [:: y].
Proof.
rewrite /ext big_ord_recl big_seq1 /= add0r.
transitivity (\sum_(k < B) \sum_y \sum_(w <- words k) rlaw P Q A (y :: w)).
  by apply: eq_bigr => k _; rewrite sum_words_S.
by rewrite exchange_big.
Qed.

(* Conditionally on the past, the position emits the target's law when its admission does
   not read its draft (T1 part 1, averaged over the admission coin). *)
Lemma stop_go P Q A y : dist (P [::]) -> dist (Q [::]) -> (forall x x', A [::] x = A [::] x') ->
  stop P Q A y + go P Q A y = P [::] y.
Proof.
move=> dP dQ cA; set a := A [::] y.
have eA x : A [::] x = a by apply: cA.
rewrite /stop /go.
rewrite (eq_bigr (fun x => a * (Q [::] x * (1 - ratio (P [::]) (Q [::]) x)))); last first.
  by move=> x _; rewrite eA mulrCA mulrA.
rewrite -mulr_sumr -/(reject _ _).
rewrite (eq_bigr (fun x => Q [::] x * (1 - a))); last by move=> x _; rewrite eA.
rewrite -mulr_suml (proj2 dQ) mul1r eA [Q [::] y * _ * _]mulrAC ratio_overlap; last 2 first.
- by case: dP.
- by case: dQ.
have := T1_one_step_law dP dQ y; rewrite (step_law_split dP dQ) => e.
transitivity (a * (overlap (P [::]) (Q [::]) y + reject (P [::]) (Q [::]) * resid (P [::]) (Q [::]) y) + (1 - a) * P [::] y).
  by ring.
by rewrite e; ring.
Qed.

(* With admission probabilities in [0, 1] every output has non-negative probability. *)
Lemma ratio_ge0 (p q : V -> R) x : 0 <= p x -> 0 <= q x -> 0 <= ratio p q x.
Proof. by move=> p0 q0; rewrite /ratio le_minr ler01 divr_ge0. Qed.

Lemma ratio_le1 (p q : V -> R) x : ratio p q x <= 1.
Proof. by rewrite /ratio le_minl lexx. Qed.

Lemma resid_ge0 (p q : V -> R) y : 0 <= resid p q y.
Proof.
rewrite /resid divr_ge0 //; last by apply: sumr_ge0 => x _; rewrite /excess le_maxr lexx.
by rewrite /excess le_maxr lexx.
Qed.

Lemma rlaw_ge0 P Q A o : dists P -> dists Q -> (forall s x, 0 <= A s x <= 1) ->
  0 <= rlaw P Q A o.
Proof.
elim: o P Q A => [|y o IH] P Q A dP dQ hA //=.
have [p0 _] := dP [::]; have [q0 _] := dQ [::].
have a0 x : 0 <= A [::] x by case/andP: (hA [::] x).
have a1 x : 0 <= 1 - A [::] x by rewrite subr_ge0; case/andP: (hA [::] x).
have r1 x : 0 <= 1 - ratio (P [::]) (Q [::]) x by rewrite subr_ge0 ratio_le1.
case: o IH => [|z o] IH.
  rewrite /stop addr_ge0 // mulr_ge0 ?resid_ge0 //; apply: sumr_ge0 => x _.
    by rewrite !mulr_ge0.
  by rewrite mulr_ge0.
rewrite mulr_ge0 ?IH //.
- by rewrite /go !mulr_ge0 ?ratio_ge0.
- by move=> s; apply: dP.
- by move=> s; apply: dQ.
- by move=> s; apply: hA.
Qed.

Section Hyps.
Variables (P Q A : kernel).

Lemma causal_sh y : causal A -> causal (sh y A).
Proof. by move=> cA s; apply: cA. Qed.

Lemma bounded_sh l y : bounded l A -> bounded l.-1 (sh y A).
Proof. by move=> bA s x h; apply: bA; case: l h => //= l h; rewrite ltnS. Qed.

Lemma bounded0_go y : bounded 0 A -> go P Q A y = 0.
Proof. by move=> bA; rewrite /go bA // mulr0 mul0r. Qed.

End Hyps.

Lemma dists_sh y P : dists P -> dists (sh y P).
Proof. by move=> dP s; apply: dP. Qed.

(* The round's outputs have total mass 1. *)
Theorem round_total l B P Q A : dists P -> dists Q -> causal A -> bounded l A ->
  (l.+2 <= B)%N -> ext B P Q A [::] = 1.
Proof.
elim: l B P Q A => [|l IH] [//|B] P Q A dP dQ cA bA lB;
  have B0 : (0 < B)%N by case: (B) lB.
all: rewrite ext_nil -(proj2 (dP [::])); apply: eq_bigr => y _.
all: rewrite ext_cons; last exact: B0.
all: rewrite eqxx mul1r -(@stop_go P Q A y (dP [::]) (dQ [::])); last by move=> x x'; apply: cA.
  by rewrite bounded0_go // mul0r.
rewrite (IH B) ?mulr1 //.
- exact: dists_sh.
- exact: dists_sh.
- exact: causal_sh.
- exact: (bounded_sh y bA).
Qed.

(* T1 part 2 for any non-anticipating admission: P(|O| > |s|, O_{<= |s|+1} = s y)
   = P(|O| > |s|, O_{<= |s|} = s) * p(y | s), i.e. the round is a stopped target sample
   (written without dividing, so it also holds when the conditioning event is null). *)
Theorem round_stopped l B P Q A s y : dists P -> dists Q -> causal A -> bounded l A ->
  (l.+2 <= B)%N ->
  ext B P Q A (rcons s y) = (ext B P Q A s - rlaw P Q A s) * P s y.
Proof.
elim: s l P Q A => [|z s IH] l P Q A dP dQ cA bA lB;
  have B0 : (0 < B)%N by case: (B) lB.
  rewrite /= ext_cons; last exact: B0.
  rewrite eqxx mul1r subr0 (@round_total l B P Q A) // mul1r.
  rewrite -(@stop_go P Q A y (dP [::]) (dQ [::])); last by move=> x x'; apply: cA.
  case: l bA lB => [|l] bA lB; first by rewrite bounded0_go // mul0r.
  rewrite (round_total (l := l)) ?mulr1 //.
  - exact: dists_sh.
  - exact: dists_sh.
  - exact: causal_sh.
  - exact: (bounded_sh y bA).
  - exact: ltnW.
rewrite rcons_cons !ext_cons //.
have -> : (rcons s y == [::]) = false by case: s {IH}.
rewrite (IH l.-1) //.
- by rewrite rlaw_cons /sh mul0r add0r; ring.
- exact: dists_sh.
- exact: dists_sh.
- exact: causal_sh.
- exact: bounded_sh.
- by apply: leq_trans lB; case: (l) {bA}.
Qed.

Lemma chain_causal l : causal (chain_adm l).
Proof. by []. Qed.

Lemma chain_bounded l : bounded l (chain_adm l).
Proof. by move=> s x h; rewrite /chain_adm ltnNge h. Qed.

(* ---- N tokens ---- *)
Section Decode.
(* The target p(. | c) and the drafter q(. | c, x_<k), both functions of the context c
   (the tokens emitted so far); the admission may depend on the context too. *)
Variables (p : kernel) (q : seq V -> kernel) (adm : seq V -> kernel) (l : nat).
Hypotheses (dp : dists p) (dq : forall c, dists (q c)).
Hypotheses (ca : forall c, causal (adm c)) (ba : forall c, bounded l (adm c)).

Definition tgt c : kernel := fun s => p (c ++ s).
(* The law of one round from context c, and P(its output extends y). *)
Definition law c o := rlaw (tgt c) (q c) (adm c) o.
Definition cut c (w : seq V) := ext l.+2 (tgt c) (q c) (adm c) w.

(* The target's law of the next tokens: T(y | c) = prod_i p(y_i | c, y_<i). *)
Fixpoint T c (w : seq V) : R := if w is z :: w' then p c z * T (rcons c z) w' else 1.

(* Rounds until the N = |y| tokens y are emitted: the first round emits take n y for some
   n < |y| and the later rounds, from the extended context, emit drop n y; or the first round's
   output extends y (it is cut at N tokens). *)
Fixpoint decode fuel c (w : seq V) : R :=
  match fuel with
  | 0 => (w == [::])%:R
  | fuel'.+1 =>
      if w is [::] then 1
      else \sum_(0 <= n < size w) law c (take n w) * decode fuel' (c ++ take n w) (drop n w) + cut c w
  end.

Lemma dists_tgt c : dists (tgt c).
Proof. by move=> s; apply: dp. Qed.

Lemma cut_nil c : cut c [::] = 1.
Proof. by apply: (round_total (l := l)) => //; apply: dists_tgt. Qed.

Lemma cut_rcons c s y : cut c (rcons s y) = (cut c s - law c s) * p (c ++ s) y.
Proof. by apply: (round_stopped (l := l)) => //; apply: dists_tgt. Qed.

Lemma T_cons c z (w : seq V) : T c (z :: w) = p c z * T (rcons c z) w.
Proof. by []. Qed.

Lemma telescope c (y : seq V) k : (k <= size y)%N ->
  \sum_(0 <= n < k) law c (take n y) * T (c ++ take n y) (drop n y) =
  T c y - cut c (take k y) * T (c ++ take k y) (drop k y).
Proof.
elim: k => [_|k IH lt].
  by rewrite big_geq // take0 drop0 cats0 cut_nil mul1r subrr.
rewrite big_nat_recr //= IH; last exact: ltnW.
case: y lt {IH} => [//|y0 y'] lt.
rewrite (take_nth y0 lt) (drop_nth y0 lt) cut_rcons [T (c ++ _) (_ :: _)]T_cons -rcons_cat.
by ring.
Qed.

(* T1 part 3: the first N tokens have law T(. | c), for every N, l and finite vocabulary. *)
Theorem decode_exact N c (ys : seq V) : (size ys <= N)%N -> decode N c ys = T c ys.
Proof.
elim: N c ys => [|N IH] c [|y0 y'] //= sy.
rewrite -/(T c (y0 :: y')).
rewrite (eq_big_nat _ _ (F2 := fun n => law c (take n (y0 :: y')) *
                                   T (c ++ take n (y0 :: y')) (drop n (y0 :: y')))).
  by rewrite telescope // take_oversize ?drop_oversize //= mulr1 subrK.
move=> [|n] /andP [_ ltn]; first by rewrite /law /= !mul0r.
by rewrite IH //= size_drop; apply: leq_trans (leq_subr _ _) _; rewrite -ltnS.
Qed.

End Decode.

(* T1 with the chain rule's admission (l drafts, then the bonus token). *)
Section Chain.
Variables (p : kernel) (q : seq V -> kernel) (l : nat).
Hypotheses (dp : dists p) (dq : forall c, dists (q c)).

Theorem T1_round c s y :
  ext l.+2 (tgt p c) (q c) (chain_adm l) (rcons s y) =
  (ext l.+2 (tgt p c) (q c) (chain_adm l) s - rlaw (tgt p c) (q c) (chain_adm l) s) * p (c ++ s) y.
Proof.
apply: (round_stopped (l := l)) => //; first by move=> s'; apply: dp.
exact: chain_bounded.
Qed.

Theorem T1_round_total c : ext l.+2 (tgt p c) (q c) (chain_adm l) [::] = 1.
Proof.
apply: (round_total (l := l)) => //; first by move=> s'; apply: dp.
exact: chain_bounded.
Qed.

Theorem T1_round_ge0 c o : 0 <= rlaw (tgt p c) (q c) (chain_adm l) o.
Proof.
apply: rlaw_ge0 => //; first by move=> s'; apply: dp.
by move=> s x; rewrite /chain_adm; case: ltnP; rewrite ?ler01 ?lexx.
Qed.

Theorem T1_N_tokens N c (ys : seq V) : size ys = N ->
  decode p q (fun _ => chain_adm l) l N c ys = T p c ys.
Proof. by move=> sy; apply: decode_exact => // [c'|]; [apply: chain_bounded | rewrite sy]. Qed.

End Chain.

End Round.
