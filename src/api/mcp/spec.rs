//! What a tool is made of, shared by the catalogue (the data) and the tools (turning each
//! into an MCP tool and a request), so neither depends on the other.

use poem::http::Method;

/// One tool and the route it wraps.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub method: Method,
    /// Route template; `{name}` segments are filled from the arguments of that name.
    pub path: &'static str,
    /// Argument name → JSON Schema of the value.
    pub args: &'static [(&'static str, &'static str, &'static str)],
    pub required: &'static [&'static str],
}

/// JSON Schema types of the arguments.
pub(super) const STR: &str = "string";
pub(super) const INT: &str = "integer";
pub(super) const BOOL: &str = "boolean";
pub(super) const STRS: &str = "string[]";
