//! The load-test tools' shared parts: the round-robin proxy (also used by the integration
//! tests' simulated rollout).

pub mod proxy;
