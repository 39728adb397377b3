"""ClusterColocationProfile admission (validation; the mutation profiles drive is
``manager/webhook/pod``)."""
