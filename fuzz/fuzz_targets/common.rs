// Shared by the fuzz targets (each includes it with `#[path]`): an agent with inject advertised,
// one session, and a connection attached to it.

use acp_inject_core::agent::{Agent, AgentConfig, Output, Policy};
use acp_inject_core::wire::{InjectCapabilities, InjectMode, PendingCapabilities, SteerInStream};

#[allow(dead_code)]
pub fn agent(policy: Policy) -> Agent {
    let inject = InjectCapabilities {
        modes: vec![InjectMode::Queue, InjectMode::Steer],
        pending: Some(PendingCapabilities { replace: true, meta: None }),
        steer_in_stream: vec![SteerInStream::Interrupt, SteerInStream::Finish],
        meta: None,
    };
    let config = AgentConfig { inject: Some(inject), policy, info: Default::default(), setup: Default::default() };
    let mut a = Agent::new(config).expect("a valid configuration");
    a.create_session("s1", "/tmp");
    a.attach_to_session("c1", "s1");
    a
}

#[allow(dead_code)]
pub fn drain(a: &mut Agent) -> Vec<Output> {
    a.drain().expect("the memory store commits")
}
