//! A session's turn (R-TURN-1) as a state you can read off the type.
//!
//! A turn is in progress from the `state_update running` that opens it until the
//! `state_update idle` that ends it. While in progress it is [`Turn::Running`], waiting on the
//! user ([`Turn::RequiresAction`], R-PERM-1) or held by a model-process pause
//! ([`Turn::Paused`], R-PAUSE-1); both can hold at once (a permission request open during a
//! pause). Every in-progress variant carries the [`Activity`] that outlives those holds: the
//! model stream and whether the client asked to cancel.

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

/// The model stream of a running turn (R-STEER-3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// No model stream without a pending tool call is active.
    #[default]
    Idle,
    /// A model stream is active and may be cut for a steer.
    Active,
    /// The active stream was already asked to be cut (at most once per stream).
    InterruptRequested,
}

/// What an in-progress turn carries whatever holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    /// The model stream.
    pub stream: Stream,
    /// The client sent `session/cancel` this turn (R-CANCEL-1: asked once, and the turn then
    /// ends `cancelled` whatever the runtime reports).
    pub cancel_requested: bool,
}

/// The turn state of one session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Turn {
    /// No turn in progress.
    #[default]
    Idle,
    /// Foreground work, nothing holding it.
    Running {
        /// Stream and cancel state.
        activity: Activity,
    },
    /// At least one permission request is open (R-PERM-1); overlapping requests are counted.
    RequiresAction {
        /// Stream and cancel state.
        activity: Activity,
        /// Open permission requests.
        open: NonZeroU32,
        /// A model-process pause began (or continues) meanwhile.
        paused: bool,
    },
    /// A model-process pause (rate limit, usage cap); emits no `state_update` (R-PAUSE-1).
    Paused {
        /// Stream and cancel state.
        activity: Activity,
    },
}

/// [`Turn::permission_resolved`] with no permission request open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no permission request is open")]
pub struct NoPermissionOpen;

/// Why [`Turn::request_interrupt`] or [`Turn::request_cancel`] asks nothing of the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotRequested {
    /// No turn is in progress.
    #[error("no turn is in progress")]
    NoTurn,
    /// It was already requested (this stream, or this turn).
    #[error("already requested")]
    AlreadyRequested,
    /// Nothing is streaming that a steer could cut.
    #[error("no stream is running")]
    NoActiveStream,
}

/// A `state_update` the core must emit for a transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Announce {
    /// `requires_action`.
    RequiresAction,
    /// `running` again.
    Running,
}

impl Turn {
    /// A new turn, just opened.
    pub fn started() -> Turn {
        Turn::Running { activity: Activity::default() }
    }

    /// A turn is in progress (R-TURN-1).
    pub fn in_progress(&self) -> bool {
        !matches!(self, Turn::Idle)
    }

    /// The activity of an in-progress turn.
    pub fn activity(&self) -> Option<&Activity> {
        match self {
            Turn::Idle => None,
            Turn::Running { activity } | Turn::Paused { activity } | Turn::RequiresAction { activity, .. } => Some(activity),
        }
    }

    fn activity_mut(&mut self) -> Option<&mut Activity> {
        match self {
            Turn::Idle => None,
            Turn::Running { activity } | Turn::Paused { activity } | Turn::RequiresAction { activity, .. } => Some(activity),
        }
    }

    /// Steers may be delivered now: running, with nothing holding the turn.
    pub fn can_deliver(&self) -> bool {
        matches!(self, Turn::Running { .. })
    }

    /// R-STEER-3: a steer accepted now should cut the stream (once per stream). Marks it;
    /// `Ok` means the runtime is to be asked to interrupt, the error says why not.
    pub fn request_interrupt(&mut self) -> Result<(), NotRequested> {
        match self {
            Turn::Running { activity } => match activity.stream {
                Stream::Active => {
                    activity.stream = Stream::InterruptRequested;
                    Ok(())
                }
                Stream::InterruptRequested => Err(NotRequested::AlreadyRequested),
                _ => Err(NotRequested::NoActiveStream),
            },
            Turn::Idle => Err(NotRequested::NoTurn),
            // A paused or waiting turn streams nothing that could be cut.
            Turn::Paused { .. } | Turn::RequiresAction { .. } => Err(NotRequested::NoActiveStream),
        }
    }

    /// A stream began, ended, or was cut at a break-point.
    pub fn set_stream(&mut self, stream: Stream) {
        if let Some(a) = self.activity_mut() {
            a.stream = stream;
        }
    }

    /// R-CANCEL-1: `Ok` the first time in this turn (the runtime is then asked to stop).
    pub fn request_cancel(&mut self) -> Result<(), NotRequested> {
        match self.activity_mut() {
            Some(a) if !a.cancel_requested => {
                a.cancel_requested = true;
                Ok(())
            }
            Some(_) => Err(NotRequested::AlreadyRequested),
            None => Err(NotRequested::NoTurn),
        }
    }

    /// A permission request opened; `requires_action` is announced at the first.
    pub fn permission_requested(&mut self) -> Option<Announce> {
        let (next, announce) = match *self {
            Turn::Idle => return None,
            Turn::Running { activity } => (Turn::RequiresAction { activity, open: NonZeroU32::MIN, paused: false }, true),
            Turn::Paused { activity } => (Turn::RequiresAction { activity, open: NonZeroU32::MIN, paused: true }, true),
            Turn::RequiresAction { activity, open, paused } => {
                (Turn::RequiresAction { activity, open: open.saturating_add(1), paused }, false)
            }
        };
        *self = next;
        announce.then_some(Announce::RequiresAction)
    }

    /// A permission request was answered; `running` is announced when the last one closes
    /// (even under a pause, which has no state of its own).
    pub fn permission_resolved(&mut self) -> Result<Option<Announce>, NoPermissionOpen> {
        let Turn::RequiresAction { activity, open, paused } = *self else { return Err(NoPermissionOpen) };
        *self = match NonZeroU32::new(open.get() - 1) {
            Some(open) => Turn::RequiresAction { activity, open, paused },
            None if paused => Turn::Paused { activity },
            None => Turn::Running { activity },
        };
        Ok(if self.in_requires_action() { None } else { Some(Announce::Running) })
    }

    /// Sets the number of open permission requests to `open` without announcing anything:
    /// for a turn reloaded from a store or a snapshot, whose requests are the ones the agent
    /// still holds (a restarted process holds none: their connections are gone).
    pub fn settle_permissions(&mut self, open: u32) {
        let (activity, paused) = match *self {
            Turn::Idle => return,
            Turn::Running { activity } => (activity, false),
            Turn::Paused { activity } => (activity, true),
            Turn::RequiresAction { activity, paused, .. } => (activity, paused),
        };
        *self = match NonZeroU32::new(open) {
            Some(open) => Turn::RequiresAction { activity, open, paused },
            None if paused => Turn::Paused { activity },
            None => Turn::Running { activity },
        };
    }

    fn in_requires_action(&self) -> bool {
        matches!(self, Turn::RequiresAction { .. })
    }

    /// A model-process pause began.
    pub fn pause(&mut self) {
        *self = match *self {
            Turn::Running { activity } => Turn::Paused { activity },
            Turn::RequiresAction { activity, open, .. } => Turn::RequiresAction { activity, open, paused: true },
            other => other,
        };
    }

    /// The pause cleared.
    pub fn resume(&mut self) {
        *self = match *self {
            Turn::Paused { activity } => Turn::Running { activity },
            Turn::RequiresAction { activity, open, .. } => Turn::RequiresAction { activity, open, paused: false },
            other => other,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_are_counted_and_survive_a_pause() {
        let mut t = Turn::started();
        assert_eq!(t.permission_requested(), Some(Announce::RequiresAction));
        assert_eq!(t.permission_requested(), None);
        t.pause();
        assert_eq!(t.permission_resolved(), Ok(None));
        assert_eq!(t.permission_resolved(), Ok(Some(Announce::Running)));
        assert!(matches!(t, Turn::Paused { .. }) && !t.can_deliver());
        t.resume();
        assert!(t.can_deliver());
        assert_eq!(t.permission_resolved(), Err(NoPermissionOpen));
    }

    #[test]
    fn a_stream_is_interrupted_once_and_only_while_running() {
        let mut t = Turn::started();
        assert_eq!(Turn::Idle.request_interrupt(), Err(NotRequested::NoTurn));
        assert_eq!(t.request_interrupt(), Err(NotRequested::NoActiveStream));
        t.set_stream(Stream::Active);
        t.permission_requested();
        assert_eq!(t.request_interrupt(), Err(NotRequested::NoActiveStream), "not while requires_action");
        let _ = t.permission_resolved();
        assert_eq!(t.request_interrupt(), Ok(()));
        assert_eq!(t.request_interrupt(), Err(NotRequested::AlreadyRequested), "once per stream");
        assert_eq!(Turn::Idle.request_cancel(), Err(NotRequested::NoTurn));
        assert_eq!(t.request_cancel(), Ok(()));
        assert_eq!(t.request_cancel(), Err(NotRequested::AlreadyRequested), "once per turn");
    }
}
