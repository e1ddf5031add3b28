//! What an export carries besides the files: the rows a tenant made and cannot rebuild (its
//! folder ACLs, its memory, its work sessions and goals, its episodes, its audit trail), table
//! by table, each row as JSON text, streamed from one cursor so a table of any size passes in
//! bounded memory.

use futures::TryStreamExt;
use uuid::Uuid;

use crate::{Result, TenantTx};

/// A table an export carries, and how its rows are chosen for one vault (`$1` the vault's id).
#[derive(Debug, Clone, Copy)]
pub struct Exported {
    pub table: &'static str,
    of_vault: &'static str,
    order: &'static str,
}

/// Every table an export carries, in the order it writes them.
pub const EXPORTED: [Exported; 9] = [
    Exported { table: "acl_rules", of_vault: "vault_id = $1", order: "id" },
    Exported { table: "memory_entities", of_vault: "vault_id = $1", order: "id" },
    Exported { table: "memory_observations", of_vault: "vault_id = $1", order: "id" },
    Exported { table: "memory_relations", of_vault: "vault_id = $1", order: "source_id, target_id, relation_type" },
    Exported { table: "capture_queue", of_vault: "vault_id = $1", order: "id" },
    Exported { table: "work_sessions", of_vault: "vault_id = $1", order: "id" },
    Exported { table: "goals", of_vault: "vault_id = $1", order: "id" },
    Exported { table: "agent_episodes", of_vault: "vault = (SELECT name FROM vaults WHERE id = $1)", order: "id" },
    Exported { table: "audit_log", of_vault: "vault = (SELECT name FROM vaults WHERE id = $1)", order: "id" },
];

impl TenantTx {
    /// Sends each row of `table` (of `vault`, or the tenant's whole table) to `to` as JSON text,
    /// in a stable order, until `to` is closed; how many it sent.
    pub async fn export_rows(
        &mut self,
        table: &Exported,
        vault: Option<Uuid>,
        to: &tokio::sync::mpsc::Sender<String>,
    ) -> Result<u64> {
        let filter = if vault.is_some() { table.of_vault } else { "$1::uuid IS NULL" };
        let sql = format!("SELECT row_to_json(t)::text FROM {} t WHERE {filter} ORDER BY {}", table.table, table.order);
        let mut rows = sqlx::query_scalar::<_, String>(&sql).bind(vault).fetch(&mut *self.tx);
        let mut sent = 0;
        while let Some(row) = rows.try_next().await? {
            if to.send(row).await.is_err() {
                break;
            }
            sent += 1;
        }
        Ok(sent)
    }
}

/// What [`TenantTx::import_rows`] made of a chunk of rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowsImported {
    pub inserted: u64,
    /// Rows already there (the same ids), or naming a principal this tenant does not have.
    pub skipped: u64,
}

impl TenantTx {
    /// Inserts `rows` (JSON objects, as [`TenantTx::export_rows`] wrote them, already given this
    /// tenant's and its vaults' ids) into `table`. A row whose id is taken, or whose folder ACL
    /// names a principal this tenant does not have, is skipped and counted.
    pub async fn import_rows(&mut self, table: &Exported, rows: &[serde_json::Value]) -> Result<RowsImported> {
        let guard = if table.table == "acl_rules" {
            "r.principal_id IS NULL OR EXISTS (SELECT 1 FROM principals p WHERE p.id = r.principal_id)"
        } else {
            "true"
        };
        // The table's name comes from EXPORTED, never from the archive.
        let sql = format!(
            "INSERT INTO {t} SELECT r.* FROM json_populate_record(NULL::{t}, $1::json) r WHERE {guard} \
             ON CONFLICT DO NOTHING",
            t = table.table
        );
        let mut done = RowsImported::default();
        for row in rows {
            let inserted = sqlx::query(&sql).bind(row).execute(&mut *self.tx).await?.rows_affected();
            done.inserted += inserted;
            done.skipped += 1 - inserted.min(1);
        }
        Ok(done)
    }
}
