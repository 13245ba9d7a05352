//! Generate: what one run plays. The seed first draws its swarm of
//! conversation faults ([`faults`]); the generator then writes a
//! multi-turn conversation from the agent's repertoire as an ordinary
//! script ([`script`]), with arguments that fit the tools or do not
//! ([`args`]), and, for a session that resumes, the connections that end
//! and the handles it resumes ([`connections`]); a conversation may end
//! with the user hanging up while calls run ([`hang_up`]). A property test writes
//! its conversations as [`steps`] instead; exploration names the runs it
//! derives from a seed as [`variant`] seeds.

pub(crate) mod args;
pub(crate) mod audio;
pub(crate) mod calls;
pub(crate) mod connections;
pub(crate) mod faults;
pub(crate) mod hang_up;
pub(crate) mod script;
pub(crate) mod steps;
pub mod variant;
