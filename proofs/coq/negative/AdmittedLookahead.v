(* Deliberately wrong variant (must fail the gate): the same false claim as
   AdmissionReadsDraft.v, left Admitted.  It compiles; Print Assumptions lists it as an axiom. *)
(* expect: global_search_lossless_admitted not closed: Axioms: global_search_lossless_admitted : *)
From mathcomp Require Import all_ssreflect ssralg ssrnum rat.
From Specproof Require Import Step Round Lookahead.

Local Open Scope ring_scope.

Theorem global_search_lossless_admitted y : first_token global_search y = pA y.
Proof.
Admitted.
