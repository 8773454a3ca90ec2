//! Where configuration values come from: the TOML file, `SWITCHBOARD__…` variables and CLI
//! flags, merged into one tree before it is typed.

use super::*;

pub(super) fn config_file(overrides: &Overrides) -> Result<Option<PathBuf>, ConfigError> {
    match &overrides.config_path {
        Some(path) => Ok(Some(path.clone())),
        None => {
            let default = Path::new("./switchboard.toml");
            Ok(default.exists().then(|| default.to_path_buf()))
        }
    }
}

pub(super) fn read_toml(path: &Path) -> Result<toml::Table, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.parse::<toml::Table>()
        .map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

/// Environment values are parsed as TOML scalars/arrays when they look like one
/// (`300`, `true`, `["a@b"]`), otherwise taken as strings.
pub(super) fn env_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .filter(|v| !v.is_table())
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()))
}

pub(super) fn set_cli(
    tree: &mut toml::Table,
    section: &str,
    key: &str,
    value: String,
) -> Result<(), ConfigError> {
    let path = [section.to_owned(), key.to_owned()];
    set_path(
        tree,
        &path,
        toml::Value::String(value),
        &format!("{section}.{key}"),
    )
}

pub(super) fn set_path(
    tree: &mut toml::Table,
    path: &[String],
    value: toml::Value,
    origin: &str,
) -> Result<(), ConfigError> {
    let Some((last, parents)) = path.split_last() else {
        return Err(ConfigError::key(origin, "empty key"));
    };
    let mut node = tree;
    for part in parents {
        let entry = node
            .entry(part.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = entry
            .as_table_mut()
            .ok_or_else(|| ConfigError::key(origin, format!("`{part}` is not a section")))?;
    }
    node.insert(last.clone(), value);
    Ok(())
}
