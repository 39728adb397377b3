"""scheduler-plugins' ``scheduling.sigs.k8s.io`` group (upstream
`apis/thirdparty/scheduler-plugins/pkg/apis/scheduling`)."""
