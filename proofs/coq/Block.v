(* T8 part 1 (block verification, Sun et al.): P(tau >= m | x_<=m) = p_m and, for m < l,
   P(tau = m | x_<=m) = rho_m.
   Within one block (context fixed), P s and Q s are the target's and the drafter's laws after the
   drafted prefix s.  p_0 = 1, p_{i+1} = min(1, p_i P_{i+1}(x) / Q_{i+1}(x)),
   rho_i = sum_x max(p_i P_{i+1}(x) - Q_{i+1}(x), 0), D_i = rho_i + 1 - p_i,
   h_i = rho_i / D_i (1 if D_i = 0) for i < l and h_l = p_l.  tau is the largest i with
   eta_i <= h_i, so P(tau < m | x_<=l) = prod_{i=m..l} (1 - h_i); [G k s pm] is its expectation
   given x_<=m = s (k = l - m positions left, pm = p_m), by recursion over the next draft. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From mathcomp Require Import ring.
From Specproof Require Import Step Round.
Import GRing.Theory Num.Theory Order.TTheory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Block.
Variable R : realFieldType.
Variable V : finType.
Variables P Q : kernel R V.
Hypotheses (dP : dists P) (dQ : dists Q).
Implicit Types (s : seq V) (x : V) (pm : R).

Definition scaled pm s : V -> R := fun x => pm * P s x.
Definition pnext pm s x := ratio (scaled pm s) (Q s) x.
Definition rhob pm s := \sum_x excess (scaled pm s) (Q s) x.
Definition dd pm s := rhob pm s + 1 - pm.
Definition hb pm s := if dd pm s == 0 then 1 else rhob pm s / dd pm s.

Fixpoint G k s pm : R :=
  if k is k'.+1 then (1 - hb pm s) * \sum_x Q s x * G k' (rcons s x) (pnext pm s x)
  else 1 - pm.

(* The one-step identity: E[p_{i+1} | x_<=i] = p_i - rho_i. *)
Lemma mean_pnext pm s : 0 <= pm -> \sum_x Q s x * pnext pm s x = pm - rhob pm s.
Proof.
move=> pm0; have [p0 _] := dP s; have [q0 _] := dQ s.
rewrite (eq_bigr (fun x => scaled pm s x - excess (scaled pm s) (Q s) x)); last first.
  move=> x _; rewrite excess_overlap opprB addrC subrK /pnext ratio_overlap //.
  by rewrite /scaled mulr_ge0.
by rewrite sumrB /scaled -mulr_sumr (proj2 (dP s)) mulr1.
Qed.

Lemma pnext_01 pm s x : 0 <= pm -> 0 <= pnext pm s x <= 1.
Proof.
move=> pm0; have [p0 _] := dP s; have [q0 _] := dQ s.
by rewrite /pnext ratio_le1 andbT ratio_ge0 // /scaled mulr_ge0.
Qed.

Theorem T8_keep k s pm : 0 <= pm <= 1 -> G k s pm = 1 - pm.
Proof.
elim: k s pm => [//|k IH] s pm /andP [pm0 pm1] /=.
rewrite (eq_bigr (fun x => Q s x - Q s x * pnext pm s x)); last first.
  by move=> x _; rewrite IH ?pnext_01 // mulrBr mulr1.
rewrite sumrB (proj2 (dQ s)) mean_pnext //.
have r0 : 0 <= rhob pm s.
  by apply: sumr_ge0 => x _; rewrite /excess le_maxr lexx.
rewrite /hb; have [d0|dn0] := eqVneq (dd pm s) 0.
  rewrite subrr mul0r; apply/eqP; rewrite eq_sym.
  move: d0; rewrite /dd -addrA => /eqP; rewrite paddr_eq0 ?subr_ge0 //.
  by case/andP.
have e : 1 - (pm - rhob pm s) = dd pm s by rewrite /dd; ring.
by rewrite e mulrBl mul1r divfK // /dd; ring.
Qed.

(* P(tau = m | x_<=m) = P(tau >= m | x_<=m) - P(tau >= m + 1 | x_<=m) = rho_m for m < l. *)
Theorem T8_keep_eq k s pm : 0 <= pm <= 1 ->
  (1 - G k.+1 s pm) - (1 - \sum_x Q s x * G k (rcons s x) (pnext pm s x)) = rhob pm s.
Proof.
case/andP=> pm0 pm1; rewrite T8_keep ?pm0 //.
rewrite (eq_bigr (fun x => Q s x - Q s x * pnext pm s x)); last first.
  by move=> x _; rewrite T8_keep ?pnext_01 // mulrBr mulr1.
by rewrite sumrB (proj2 (dQ s)) mean_pnext //; ring.
Qed.

End Block.
