//! The simulated network: addresses ([`addr`]), the end hosts running
//! the real endpoint stacks ([`host`], with [`udp`] for the CBR/LCCP
//! sources), the router nodes running `ka_router::Router` ([`router`]),
//! the DCC topology's middlebox hooks ([`middlebox`]), the shared flow
//! table ([`world`]) and the builder that turns a scenario into a network
//! on the engine ([`net`]).

pub mod addr;
pub mod epochs;
pub mod host;
pub mod middlebox;
pub mod net;
pub mod router;
pub mod udp;
pub mod world;

use crate::engine::{Node, SimTime};
use world::World;

/// An end host the simulator can run.
pub trait Host: Node<Shared = World> {
    /// Called once at the end of the run: write what only the endpoint
    /// knows (time in KA mode of flows still open) into the world.
    fn finish(&mut self, now: SimTime, world: &mut World);
}
