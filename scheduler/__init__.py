"""koord-scheduler: the Python counterpart of upstream ``cmd/koord-scheduler`` and
``pkg/scheduler``: kube-scheduler's framework (``framework/``) with Koordinator's extensions
(``frameworkext/``) and plugins (``plugins/``)."""
