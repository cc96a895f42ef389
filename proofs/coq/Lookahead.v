(* T5(a): the Appendix A counterexample, from the same round definition as T1 ([rlaw] in
   Round.v) with two admission rules.  V = bool (true = A, false = B), over the rationals.
   p = (7/10, 3/10) at every context, q = (1/2, 1/2), l <= 2 drafts.
   - Global search (reads the draft): position 1 is verified iff x_1 = A, and then position 2
     as well (l = 2 after A, l = 0 after B).  The first token has law (17/20, 3/20).
   - Algorithm 1 with the break (decided before x_1 is drawn): l = 0, the token is the bonus,
     law (7/10, 3/10) = p.  Any admission that does not read the draft it decides on gives p
     (T1 part 2, [round_stopped]). *)
From mathcomp Require Import all_ssreflect ssralg ssrnum rat.
From Specproof Require Import Step Round.
Import GRing.Theory Num.Theory Order.TTheory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Definition pA : bool -> rat := fun x => if x then 7%:R / 10%:R else 3%:R / 10%:R.
Definition qA : bool -> rat := fun _ => 2%:R^-1.
Definition P : kernel rat_realFieldType bool_finType := fun _ => pA.
Definition Q : kernel rat_realFieldType bool_finType := fun _ => qA.

(* The global search's admission: verify x_1 iff it is A, then verify x_2 after A. *)
Definition global_search : kernel rat_realFieldType bool_finType := fun s x =>
  match s with
  | [::] => (x : bool)%:R
  | [:: true] => 1
  | _ => 0
  end.
(* Algorithm 1 with the break: Theta_1 = 0.9 < Theta_0 = 1 stops the walk at l = 0. *)
Definition with_break : kernel rat_realFieldType bool_finType := fun _ _ => 0.

(* P(O_1 = y): the law of the round's first emitted token. *)
Definition first_token (A : kernel rat_realFieldType bool_finType) y := ext 4 P Q A [:: y].

Lemma dist_pA : dist pA.
Proof.
split; first by case; rewrite /pA divr_ge0 ?ler0n.
by rewrite big_bool /=; apply/eqP; vm_compute.
Qed.

Lemma dist_qA : dist qA.
Proof.
split; first by move=> x; rewrite /qA invr_ge0 ler0n.
by rewrite big_bool /=; apply/eqP; vm_compute.
Qed.

Lemma dists_P : dists P. Proof. by move=> s; exact: dist_pA. Qed.
Lemma dists_Q : dists Q. Proof. by move=> s; exact: dist_qA. Qed.

(* After the first accepted token the global search no longer reads drafts. *)
Lemma first_token_eq (A : kernel rat_realFieldType bool_finType) y :
  causal (sh y A) -> bounded 1 (sh y A) -> first_token A y = stop P Q A y + go P Q A y.
Proof.
move=> cA bA; rewrite /first_token ext_cons // eqxx mul1r.
by rewrite (round_total (l := 1)) ?mulr1 //; [exact: dists_P | exact: dists_Q].
Qed.

Theorem T5a_global_search :
  first_token global_search true = 17%:R / 20%:R /\ first_token global_search false = 3%:R / 20%:R.
Proof.
have cA y : causal (sh y global_search) by case: y => [] [|z s].
have bA y : bounded 1 (sh y global_search) by case: y => [] [|z s].
rewrite (first_token_eq (cA true) (bA true)) (first_token_eq (cA false) (bA false)).
by rewrite /stop /go /resid !big_bool /=; split; apply/eqP; vm_compute.
Qed.

Theorem T5a_with_break :
  first_token with_break true = 7%:R / 10%:R /\ first_token with_break false = 3%:R / 10%:R.
Proof.
have cA y : causal (sh y with_break) by [].
have bA y : bounded 1 (sh y with_break) by [].
rewrite (first_token_eq (cA true) (bA true)) (first_token_eq (cA false) (bA false)).
by rewrite /stop /go /resid !big_bool /=; split; apply/eqP; vm_compute.
Qed.

(* The contrast, one statement: with the same round and the same p, q, an admission that does
   not read the draft it decides on (any such rule verifying at most 2 drafts, the break included)
   emits p's law; the global search, which reads x_1, does not. *)
Theorem T5a_contrast :
  (forall A, causal A -> bounded 2 A -> forall y, first_token A y = pA y) /\
  first_token global_search true <> pA true.
Proof.
split.
  move=> A cA bA y; rewrite /first_token -[[:: y]]/(rcons [::] y).
  rewrite (round_stopped (l := 2)) //=; [|exact: dists_P|exact: dists_Q].
  by rewrite subr0 (round_total (l := 2)) ?mul1r //; [exact: dists_P | exact: dists_Q].
have [-> _] := T5a_global_search.
by apply/eqP; vm_compute.
Qed.

(* T1 part 1 needs the residual norm(max(0, p - q)): drawing the replacement from p instead is
   biased.  p = (1/2, 1/2), q = (1, 0): the token is A with probability 3/4. *)
Definition pHalf : bool -> rat := fun _ => 2%:R^-1.
Definition qOnA : bool -> rat := fun x => if x then 1 else 0.

Theorem T1_residual_from_p_biased :
  dist pHalf /\ dist qOnA /\ step_law pHalf qOnA pHalf true = 3%:R / 4%:R
  /\ step_law pHalf qOnA (resid pHalf qOnA) true = pHalf true.
Proof.
have dp : dist pHalf.
  split; first by move=> x; rewrite /pHalf invr_ge0 ler0n.
  by rewrite big_bool /=; apply/eqP; vm_compute.
have dq : dist qOnA.
  by split; [case | rewrite big_bool /=; apply/eqP; vm_compute].
do !split => //; last exact: T1_one_step_law.
by rewrite /step_law big_bool /=; apply/eqP; vm_compute.
Qed.
