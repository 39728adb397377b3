"""koordlet metric cache (upstream ``pkg/koordlet/metriccache``): time series and KV stores."""
