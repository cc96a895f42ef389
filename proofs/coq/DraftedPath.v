(* T7 part 4: the drafted-path product of prefix-conditional confidences c_j = 1 - TV(p_j, q_j)
   is not an unbiased estimate of P(A_1 A_2).  V = bool (true = A), over the rationals:
   p = (1/2, 1/2) everywhere, q_1 = (3/4, 1/4), q_2 = p after A and (1, 0) after B. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum rat.
From Specproof Require Import Step Round Tokens.
Import GRing.Theory Num.Theory Order.TTheory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Definition half : bool -> rat := fun _ => 2%:R^-1.
Definition P : kernel rat_realFieldType bool_finType := fun _ => half.
Definition Q : kernel rat_realFieldType bool_finType := fun s =>
  match s with
  | [::] => fun x => if x then 3%:R / 4%:R else 4%:R^-1
  | [:: true] => half
  | _ => fun x => if x then 1 else 0
  end.

(* The confidence at prefix s: the acceptance probability 1 - TV there (T7 part 2). *)
Definition conf s : rat := 1 - tv (P s) (Q s).

Theorem T7_drafted_path :
  accp 2 P Q (@chain_adm rat_realFieldType bool_finType 2) = 5%:R / 8%:R
  /\ \sum_x Q [::] x * (conf [::] * conf [:: x]) = 21%:R / 32%:R.
Proof.
split; last by rewrite /conf /tv !big_bool /=; apply/eqP; vm_compute.
by rewrite /= /go !big_bool /=; apply/eqP; vm_compute.
Qed.
