//! Replay (R-REPLAY-1): a session's history folded into the updates `session/resume` sends.
//!
//! Each message (user, agent, thought) is replayed once, at the position where it first
//! appeared, as an upsert carrying its final content: chunks appended, upserts applied (absent
//! leaves, `null` clears, an array replaces), clears applied (C-MSG-1, C-MSG-2). Each tool call
//! is replayed once as one `tool_call_update` with every reported member merged (later values
//! win, content chunks appended), and the plan once with its last value.

use std::collections::HashMap;

use acp_inject_wire::{
    AgentMessage, AgentThought, ContentBlock, MessageId, Patch, PlanUpdate, SessionUpdate, ToolCallUpdate, UserMessage,
};
use serde_json::{Map, Value};

use super::record::HistoryEntry;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Role {
    User,
    Agent,
    Thought,
}

enum Item {
    Message { role: Role, id: MessageId, content: Vec<ContentBlock> },
    ToolCall(Map<String, Value>),
    Plan(Box<PlanUpdate>),
}

#[derive(Default)]
struct Fold {
    items: Vec<Item>,
    messages: HashMap<(Role, String), usize>,
    tool_calls: HashMap<String, usize>,
    plan: Option<usize>,
    last_agent: Option<usize>,
}

impl Fold {
    fn message(&mut self, role: Role, id: &MessageId) -> &mut Vec<ContentBlock> {
        let items = &mut self.items;
        let i = *self.messages.entry((role, id.0.clone())).or_insert_with(|| {
            items.push(Item::Message { role, id: id.clone(), content: Vec::new() });
            items.len() - 1
        });
        if role == Role::Agent {
            self.last_agent = Some(i);
        }
        match &mut self.items[i] {
            Item::Message { content, .. } => content,
            _ => unreachable!("message indexes name messages"),
        }
    }

    fn upsert(&mut self, role: Role, id: &MessageId, patch: &Patch<Vec<ContentBlock>>) {
        let content = self.message(role, id);
        match patch {
            Patch::Absent => {}
            Patch::Null => content.clear(),
            Patch::Value(v) => *content = v.clone(),
        }
    }

    fn tool_call(&mut self, id: &str) -> &mut Map<String, Value> {
        let items = &mut self.items;
        let i = *self.tool_calls.entry(id.to_owned()).or_insert_with(|| {
            items.push(Item::ToolCall(Map::new()));
            items.len() - 1
        });
        match &mut self.items[i] {
            Item::ToolCall(m) => m,
            _ => unreachable!("tool call indexes name tool calls"),
        }
    }

    fn apply(&mut self, entry: &HistoryEntry) {
        let update = match entry {
            HistoryEntry::User { message_id, content } => {
                *self.message(Role::User, message_id) = content.clone();
                return;
            }
            HistoryEntry::Update { update } => update,
        };
        match update {
            SessionUpdate::AgentMessage(m) => self.upsert(Role::Agent, &m.message_id, &m.content),
            SessionUpdate::AgentMessageChunk(m) => self.message(Role::Agent, &m.message_id).push(m.content.clone()),
            SessionUpdate::AgentThought(m) => self.upsert(Role::Thought, &m.message_id, &m.content),
            SessionUpdate::AgentThoughtChunk(m) => self.message(Role::Thought, &m.message_id).push(m.content.clone()),
            SessionUpdate::AgentMessageClear(c) => {
                let target = match &c.message_id {
                    Some(id) => self.messages.get(&(Role::Agent, id.0.clone())).copied(),
                    None => self.last_agent,
                };
                if let Some(Item::Message { content, .. }) = target.and_then(|i| self.items.get_mut(i)) {
                    content.clear();
                }
            }
            SessionUpdate::ToolCallUpdate(t) => {
                let Ok(Value::Object(members)) = serde_json::to_value(t) else { return };
                self.tool_call(&t.tool_call_id.0).extend(members);
            }
            SessionUpdate::ToolCallContentChunk(c) => {
                let Ok(piece) = serde_json::to_value(&c.content) else { return };
                let call = self.tool_call(&c.tool_call_id.0);
                call.entry("toolCallId").or_insert_with(|| Value::String(c.tool_call_id.0.clone()));
                match call.entry("content").or_insert_with(|| Value::Array(Vec::new())) {
                    Value::Array(items) => items.push(piece),
                    other => *other = Value::Array(vec![piece]),
                }
            }
            SessionUpdate::PlanUpdate(p) => match self.plan {
                Some(i) => self.items[i] = Item::Plan(p.clone()),
                None => {
                    self.items.push(Item::Plan(p.clone()));
                    self.plan = Some(self.items.len() - 1);
                }
            },
            _ => {}
        }
    }
}

/// The updates that replay `history`, in order.
pub fn replay(history: &[HistoryEntry]) -> Vec<SessionUpdate> {
    let mut fold = Fold::default();
    for entry in history {
        fold.apply(entry);
    }
    fold.items
        .into_iter()
        .filter_map(|item| match item {
            Item::Message { role, id, content } => Some(match role {
                Role::User => UserMessage::new(id).content(content).into(),
                Role::Agent => AgentMessage::new(id).content(content).into(),
                Role::Thought => AgentThought::new(id).content(content).into(),
            }),
            // Merged from decoded updates, so it decodes again; a failure would drop only this call.
            Item::ToolCall(members) => serde_json::from_value::<ToolCallUpdate>(Value::Object(members)).ok().map(Into::into),
            Item::Plan(p) => Some(SessionUpdate::PlanUpdate(p)),
        })
        .collect()
}
