//! SCIM 2.0 (RFC 7643, 7644) for a tenant's directory: `/Users` and `/Groups` with filters
//! (`attribute eq "value"`), paging, PUT and PATCH (the shapes Okta and Entra ID send, string
//! booleans included), so a directory provisions people and groups and deprovisions people.
//! A deprovisioned person's grants are revoked and every gateway stops accepting their tokens
//! before the answer (the tenant's token generation moves on); so does a membership change,
//! since a person's groups travel with their token checks.

use otc_store::{DirectoryFilter, DirectoryGroup, DirectoryUser, StoreError};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::wire::{
    AuthenticationScheme, BulkSupport, FilterSupport, ResourceType, ScimErrorBody, ScimGroup, ScimList, ScimMember,
    ScimMeta, ScimResource, ScimUser, ServiceProviderConfig, Supported,
};
use crate::{Identity, IdentityError};

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
/// The most resources one page returns.
const MAX_PAGE: i64 = 200;

/// A SCIM error answer (RFC 7644 §3.12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimError {
    pub status: u16,
    pub scim_type: Option<&'static str>,
    pub detail: String,
}

impl ScimError {
    fn new(status: u16, scim_type: Option<&'static str>, detail: impl Into<String>) -> Self {
        let detail: String = detail.into();
        ScimError { status, scim_type, detail: detail.chars().filter(|c| !c.is_control()).take(300).collect() }
    }
    fn invalid_value(detail: impl Into<String>) -> Self {
        Self::new(400, Some("invalidValue"), detail)
    }
    fn invalid_syntax(detail: impl Into<String>) -> Self {
        Self::new(400, Some("invalidSyntax"), detail)
    }
    fn not_found(what: &str, id: &str) -> Self {
        Self::new(404, None, format!("{what} {id} not found"))
    }

    pub fn body(&self) -> ScimErrorBody {
        ScimErrorBody {
            schemas: vec![ERROR_SCHEMA.into()],
            status: self.status.to_string(),
            scim_type: self.scim_type.map(str::to_string),
            detail: self.detail.clone(),
        }
    }
}

impl From<IdentityError> for ScimError {
    fn from(err: IdentityError) -> Self {
        crate::log_internal(&err);
        ScimError::new(500, None, "the server could not answer; try again")
    }
}

impl From<StoreError> for ScimError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Conflict { .. } => ScimError::new(409, Some("uniqueness"), "the name is already taken"),
            StoreError::Invalid { constraint } => {
                ScimError::invalid_value(format!("a value was refused ({constraint})"))
            }
            StoreError::NotFound(what) => ScimError::invalid_value(format!("{what} is not a provisioned user")),
            other => IdentityError::Store(other).into(),
        }
    }
}

/// `attribute eq "value"`: the one filter directories send to find a resource before creating it.
pub fn parse_filter(text: Option<&str>, name_attribute: &str) -> Result<DirectoryFilter, ScimError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(DirectoryFilter::All) };
    let bad = || {
        ScimError::new(
            400,
            Some("invalidFilter"),
            format!("only `attribute eq \"value\"` filters are supported: {text}"),
        )
    };
    let mut parts = text.splitn(3, ' ');
    let (Some(attribute), Some(op), Some(value)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    if !op.eq_ignore_ascii_case("eq") {
        return Err(bad());
    }
    let value = value.trim();
    let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).ok_or_else(bad)?.replace("\\\"", "\"");
    match attribute {
        a if a.eq_ignore_ascii_case("id") => {
            Ok(Uuid::try_parse(&value).map(DirectoryFilter::Id).unwrap_or(DirectoryFilter::Id(Uuid::nil())))
        }
        a if a.eq_ignore_ascii_case(name_attribute) => Ok(DirectoryFilter::Name(value)),
        a if a.eq_ignore_ascii_case("externalId") => Ok(DirectoryFilter::ExternalId(value)),
        _ => Err(bad()),
    }
}

fn page(start_index: Option<i64>, count: Option<i64>) -> (i64, i64) {
    let start = start_index.unwrap_or(1).max(1);
    let count = count.unwrap_or(100).clamp(0, MAX_PAGE);
    (start, count)
}

fn list<T>(resources: Vec<T>, total: i64, start: i64) -> ScimList<T> {
    ScimList {
        schemas: vec![LIST_SCHEMA.into()],
        total_results: total,
        start_index: start,
        items_per_page: resources.len(),
        resources,
    }
}

/// The core attributes by their canonical spelling: SCIM attribute names are case-insensitive
/// (RFC 7643 §2.1), and directories do send `Active` or `username`.
const CORE_ATTRIBUTES: [&str; 9] =
    ["userName", "active", "externalId", "displayName", "name", "emails", "password", "members", "id"];

fn canonical(name: &str) -> &str {
    CORE_ATTRIBUTES.iter().find(|a| a.eq_ignore_ascii_case(name)).copied().unwrap_or(name)
}

/// A representation with its core attributes spelled canonically.
fn canonical_keys(object: &Map<String, Value>) -> Map<String, Value> {
    object.iter().map(|(k, v)| (canonical(k).to_string(), v.clone())).collect()
}

/// A boolean as directories send it: true, or "True" (Entra ID).
fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// The attributes kept of a user: everything the directory sent but what the server owns (id,
/// meta, schemas) or never keeps (password).
fn kept_attributes(user: &Map<String, Value>) -> Value {
    let mut kept = user.clone();
    for owned in ["id", "meta", "schemas", "userName", "active", "password"] {
        kept.remove(owned);
    }
    Value::Object(kept)
}

/// A user's email: its primary email, else its first, else its userName when that is one.
fn email_of(user: &Map<String, Value>, user_name: &str) -> Option<String> {
    let emails = user.get("emails").and_then(Value::as_array);
    let chosen = emails
        .and_then(|e| e.iter().find(|m| m["primary"] == true).or_else(|| e.first()))
        .and_then(|m| m["value"].as_str());
    chosen
        .map(str::to_string)
        .or_else(|| user_name.contains('@').then(|| user_name.to_string()))
        .map(|e| e.to_lowercase())
}

fn user_json(base: &str, user: &DirectoryUser) -> ScimResource {
    let mut attributes = user.attributes.as_object().cloned().unwrap_or_default();
    // What the server owns is its own, whatever an older row kept.
    for owned in ["schemas", "id", "userName", "active", "meta"] {
        attributes.remove(owned);
    }
    ScimResource::User(ScimUser {
        schemas: vec![USER_SCHEMA.into()],
        id: user.id,
        user_name: user.user_name.clone(),
        active: user.active,
        meta: ScimMeta {
            resource_type: "User".into(),
            created: Some(user.created_at),
            last_modified: None,
            location: format!("{base}/Users/{}", user.id),
        },
        attributes,
    })
}

fn group_json(base: &str, group: &DirectoryGroup) -> ScimResource {
    let members = group
        .members
        .iter()
        .map(|(id, name)| ScimMember { value: *id, display: name.clone(), reference: format!("{base}/Users/{id}") })
        .collect();
    ScimResource::Group(ScimGroup {
        schemas: vec![GROUP_SCHEMA.into()],
        id: group.id,
        display_name: group.display_name.clone(),
        external_id: group.external_id.clone(),
        members: Some(members),
        meta: ScimMeta {
            resource_type: "Group".into(),
            created: Some(group.created_at),
            last_modified: Some(group.updated_at),
            location: format!("{base}/Groups/{}", group.id),
        },
    })
}

fn object(body: &Value) -> Result<&Map<String, Value>, ScimError> {
    body.as_object().ok_or_else(|| ScimError::invalid_syntax("the body must be a JSON object"))
}

/// The checked parts of a user representation.
struct UserFields {
    user_name: String,
    email: Option<String>,
    active: bool,
    attributes: Value,
}

/// A user's email must be in one of the tenant's email domains (listed by an operator, or
/// proven): a directory never provisions a person of another organisation's domain, whom a
/// sign-in by email would then link here.
async fn check_domain(tx: &mut otc_store::TenantTx, email: Option<&str>) -> Result<(), ScimError> {
    let Some(email) = email else { return Ok(()) };
    let domain = crate::authorize::email_domain(email).map(|d| d.trim_end_matches('.').to_string()).unwrap_or_default();
    let domains = tx.tenant_domains().await?;
    if domains.iter().any(|d| d.domain == domain) {
        return Ok(());
    }
    Err(ScimError::new(
        403,
        None,
        format!(
            "{domain:?} is not one of this organisation's email domains ({}); an operator lists them with `obsidian-tc tenant domains`",
            if domains.is_empty() {
                "it has none".to_string()
            } else {
                domains.iter().map(|d| d.domain.as_str()).collect::<Vec<_>>().join(", ")
            }
        ),
    ))
}

fn user_fields(user: &Map<String, Value>) -> Result<UserFields, ScimError> {
    let user_name = user
        .get("userName")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty() && n.chars().count() <= 200)
        .ok_or_else(|| ScimError::invalid_value("userName is required (1 to 200 characters)"))?
        .to_string();
    let active = match user.get("active") {
        None | Some(Value::Null) => true,
        Some(v) => boolean(v).ok_or_else(|| ScimError::invalid_value("active must be a boolean"))?,
    };
    if user.get("externalId").is_some_and(|e| !e.is_string() && !e.is_null()) {
        return Err(ScimError::invalid_value("externalId must be a string"));
    }
    let attributes = kept_attributes(user);
    if attributes.to_string().len() > 16 * 1024 {
        return Err(ScimError::invalid_value("the user's attributes are larger than 16 KB"));
    }
    Ok(UserFields { email: email_of(user, &user_name), user_name, active, attributes })
}

fn group_name(value: Option<&Value>) -> Result<String, ScimError> {
    let name = value.and_then(Value::as_str).map(str::trim).unwrap_or("");
    if !otc_vault::acl::is_group_name(name) {
        return Err(ScimError::invalid_value(
            "displayName must be 1 to 100 letters, digits, spaces or ._@:- starting with a letter or digit (it names an ACL group)",
        ));
    }
    Ok(name.to_string())
}

fn member_ids(value: &Value) -> Result<Vec<Uuid>, ScimError> {
    let items = match value {
        Value::Array(items) => items.clone(),
        Value::Object(_) => vec![value.clone()],
        _ => return Err(ScimError::invalid_value("members must be a list of {\"value\": id}")),
    };
    items
        .iter()
        .map(|m| {
            m["value"]
                .as_str()
                .and_then(|v| Uuid::try_parse(v).ok())
                .ok_or_else(|| ScimError::invalid_value(format!("member {} is not a user id", m["value"])))
        })
        .collect()
}

/// The operations of a PATCH request.
fn operations(body: &Value) -> Result<Vec<(String, Option<String>, Value)>, ScimError> {
    let body = object(body)?;
    if let Some(schemas) = body.get("schemas").and_then(Value::as_array)
        && !schemas.iter().any(|s| s == PATCH_SCHEMA)
    {
        return Err(ScimError::invalid_syntax("a PATCH body has the PatchOp schema"));
    }
    let ops = body
        .get("Operations")
        .or_else(|| body.get("operations"))
        .and_then(Value::as_array)
        .ok_or_else(|| ScimError::invalid_syntax("Operations is required"))?;
    if ops.len() > 1000 {
        return Err(ScimError::invalid_value("at most 1000 operations"));
    }
    ops.iter()
        .map(|op| {
            let name = op["op"].as_str().map(str::to_ascii_lowercase).unwrap_or_default();
            if !matches!(name.as_str(), "add" | "replace" | "remove") {
                return Err(ScimError::invalid_syntax(format!("op must be add, replace or remove: {}", op["op"])));
            }
            Ok((name, op["path"].as_str().map(str::to_string), op.get("value").cloned().unwrap_or(Value::Null)))
        })
        .collect()
}

/// Applies one add/replace/remove to a user representation (`path` a top-level attribute, a
/// sub-attribute `name.givenName`, or a filtered multi-valued one `emails[type eq "work"].value`).
fn patch_user(user: &mut Map<String, Value>, op: &str, path: Option<&str>, value: Value) -> Result<(), ScimError> {
    let Some(path) = path else {
        let Value::Object(values) = value else {
            return Err(ScimError::invalid_value("a patch without path takes an object"));
        };
        for (k, v) in values {
            patch_user(user, op, Some(canonical(&k)), v)?;
        }
        return Ok(());
    };
    if let Some((attribute, rest)) = path.split_once('[') {
        // attribute[type eq "work"].sub
        let (filter, sub) = rest.split_once(']').ok_or_else(|| ScimError::new(400, Some("invalidPath"), path))?;
        let sub = sub.trim_start_matches('.');
        let mut f = filter.splitn(3, ' ');
        let (Some(key), Some(_), Some(wanted)) = (f.next(), f.next(), f.next()) else {
            return Err(ScimError::new(400, Some("invalidPath"), path));
        };
        let wanted = wanted.trim_matches('"');
        let list = user.entry(attribute.to_string()).or_insert_with(|| json!([]));
        let Value::Array(items) = list else { return Err(ScimError::new(400, Some("invalidPath"), path)) };
        let position = items.iter().position(|i| i[key].as_str() == Some(wanted));
        match (op, position) {
            ("remove", Some(i)) if sub.is_empty() => {
                items.remove(i);
            }
            ("remove", Some(i)) => {
                if let Some(item) = items[i].as_object_mut() {
                    item.remove(sub);
                }
            }
            ("remove", None) => {}
            (_, Some(i)) if sub.is_empty() => items[i] = value,
            (_, Some(i)) => items[i][sub] = value,
            (_, None) => {
                let mut item = json!({key: wanted});
                if sub.is_empty() {
                    item = value;
                } else {
                    item[sub] = value;
                }
                items.push(item);
            }
        }
        return Ok(());
    }
    let (head, sub) = match path.split_once('.') {
        // A path may carry the schema URN; its last segment names the attribute.
        Some(_) if path.starts_with("urn:") => (path.rsplit(':').next().unwrap_or(path), None),
        Some((h, s)) => (h, Some(s)),
        None => (path, None),
    };
    let head = canonical(head);
    if op == "remove" && matches!(head, "active" | "userName") {
        return Err(ScimError::invalid_value(format!("{head} cannot be removed")));
    }
    match (op, sub) {
        ("remove", None) => {
            user.remove(head);
        }
        ("remove", Some(sub)) => {
            if let Some(Value::Object(inner)) = user.get_mut(head) {
                inner.remove(sub);
            }
        }
        (_, None) => {
            user.insert(head.to_string(), value);
        }
        (_, Some(sub)) => {
            let inner = user.entry(head.to_string()).or_insert_with(|| json!({}));
            if !inner.is_object() {
                *inner = json!({});
            }
            inner[sub] = value;
        }
    }
    Ok(())
}

/// The two kinds of resource, as their endpoints name them (`/Users`, `/Groups`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Users,
    Groups,
}

impl Resource {
    pub fn from_endpoint(name: &str) -> Option<Self> {
        match name {
            "Users" => Some(Resource::Users),
            "Groups" => Some(Resource::Groups),
            _ => None,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Resource::Users => "user",
            Resource::Groups => "group",
        }
    }

    /// The attribute a filter finds a resource by, besides `id` and `externalId`.
    fn name_attribute(self) -> &'static str {
        match self {
            Resource::Users => "userName",
            Resource::Groups => "displayName",
        }
    }

    fn id(self, id: &str) -> Result<Uuid, ScimError> {
        Uuid::try_parse(id).map_err(|_| ScimError::not_found(self.noun(), id))
    }
}

/// A listing's query: `filter`, `startIndex`, `count`, `excludedAttributes`.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    pub filter: Option<String>,
    #[serde(rename = "startIndex")]
    pub start_index: Option<i64>,
    pub count: Option<i64>,
    #[serde(rename = "excludedAttributes")]
    pub excluded_attributes: Option<String>,
}

/// A group's representation, checked: its name, external id and members.
struct GroupFields {
    name: String,
    external_id: Option<String>,
    members: Vec<Uuid>,
}

fn group_fields(body: &Value) -> Result<GroupFields, ScimError> {
    let body = object(body)?;
    Ok(GroupFields {
        name: group_name(body.get("displayName"))?,
        external_id: body.get("externalId").and_then(Value::as_str).map(str::to_string),
        members: body.get("members").map(member_ids).transpose()?.unwrap_or_default(),
    })
}

impl Identity {
    pub async fn scim_list(
        &self,
        tenant: Uuid,
        base: &str,
        resource: Resource,
        query: &ListQuery,
    ) -> Result<ScimList<ScimResource>, ScimError> {
        let filter = parse_filter(query.filter.as_deref(), resource.name_attribute())?;
        let (start, count) = page(query.start_index, query.count);
        let mut tx = self.store.begin(tenant).await?;
        let (total, resources) = match resource {
            Resource::Users => {
                let (total, users) = tx.directory_users(&filter, start - 1, count).await?;
                (total, users.iter().map(|u| user_json(base, u)).collect())
            }
            Resource::Groups => {
                let without_members =
                    query.excluded_attributes.as_deref().is_some_and(|e| e.split(',').any(|a| a.trim() == "members"));
                let (total, groups) = tx.directory_groups(&filter, start - 1, count).await?;
                let groups = groups.iter().map(|g| {
                    let mut out = group_json(base, g);
                    if let ScimResource::Group(group) = &mut out
                        && without_members
                    {
                        group.members = None;
                    }
                    out
                });
                (total, groups.collect())
            }
        };
        tx.commit().await?;
        Ok(list(resources, total, start))
    }

    pub async fn scim_get(
        &self,
        tenant: Uuid,
        base: &str,
        resource: Resource,
        id: &str,
    ) -> Result<ScimResource, ScimError> {
        let uuid = resource.id(id)?;
        let mut tx = self.store.begin(tenant).await?;
        let found = match resource {
            Resource::Users => tx.directory_user(uuid).await?.map(|u| user_json(base, &u)),
            Resource::Groups => tx.directory_group(uuid).await?.map(|g| group_json(base, &g)),
        };
        tx.commit().await?;
        found.ok_or_else(|| ScimError::not_found(resource.noun(), id))
    }

    /// POST (`id` None) or PUT: the whole representation.
    pub async fn scim_put(
        &self,
        tenant: Uuid,
        base: &str,
        resource: Resource,
        id: Option<&str>,
        body: &Value,
    ) -> Result<ScimResource, ScimError> {
        let uuid = id.map(|id| resource.id(id)).transpose()?;
        let missing = || ScimError::not_found(resource.noun(), id.unwrap_or(""));
        let mut tx = self.store.begin(tenant).await?;
        let answer = match resource {
            Resource::Users => {
                let f = user_fields(&canonical_keys(object(body)?))?;
                check_domain(&mut tx, f.email.as_deref()).await?;
                let user = match uuid {
                    None => tx.create_directory_user(&f.user_name, f.email.as_deref(), f.active, &f.attributes).await?,
                    Some(uuid) => tx
                        .update_directory_user(uuid, &f.user_name, f.email.as_deref(), f.active, &f.attributes)
                        .await?
                        .ok_or_else(missing)?,
                };
                user_json(base, &user)
            }
            Resource::Groups => {
                let f = group_fields(body)?;
                let uuid = match uuid {
                    None => tx.create_directory_group(&f.name, f.external_id.as_deref()).await?,
                    Some(uuid) if tx.update_directory_group(uuid, &f.name, f.external_id.as_deref()).await? => uuid,
                    Some(_) => return Err(missing()),
                };
                tx.change_directory_members(uuid, Some(&f.members), &[], &[]).await?;
                group_json(base, &tx.directory_group(uuid).await?.ok_or_else(missing)?)
            }
        };
        tx.commit().await?;
        self.tokens_changed(tenant).await;
        Ok(answer)
    }

    pub async fn scim_patch(
        &self,
        tenant: Uuid,
        base: &str,
        resource: Resource,
        id: &str,
        body: &Value,
    ) -> Result<ScimResource, ScimError> {
        let uuid = resource.id(id)?;
        let ops = operations(body)?;
        let missing = || ScimError::not_found(resource.noun(), id);
        let mut tx = self.store.begin(tenant).await?;
        let answer = match resource {
            Resource::Users => {
                let user = tx.directory_user(uuid).await?.ok_or_else(missing)?;
                // The representation a directory sees, patched as it would patch it.
                let mut current = match serde_json::to_value(user_json(base, &user)) {
                    Ok(Value::Object(user)) => user,
                    _ => Map::new(),
                };
                for (op, path, value) in ops {
                    patch_user(&mut current, &op, path.as_deref(), value)?;
                }
                let f = user_fields(&current)?;
                check_domain(&mut tx, f.email.as_deref()).await?;
                let user = tx
                    .update_directory_user(uuid, &f.user_name, f.email.as_deref(), f.active, &f.attributes)
                    .await?
                    .ok_or_else(missing)?;
                user_json(base, &user)
            }
            Resource::Groups => {
                let group = tx.directory_group(uuid).await?.ok_or_else(missing)?;
                let (mut name, mut external) = (group.display_name.clone(), group.external_id.clone());
                let (mut replace, mut add, mut remove): (Option<Vec<Uuid>>, Vec<Uuid>, Vec<Uuid>) =
                    (None, vec![], vec![]);
                for (op, path, value) in ops {
                    let path = path.unwrap_or_default();
                    let lower = path.to_ascii_lowercase();
                    match (op.as_str(), lower.as_str()) {
                        // Okta and Entra: {"op":"replace","value":{"displayName":..,"members":[..]}}
                        (_, "") => {
                            let Value::Object(values) = value else {
                                return Err(ScimError::invalid_value("a patch without path takes an object"));
                            };
                            if let Some(n) = values.get("displayName") {
                                name = group_name(Some(n))?;
                            }
                            if let Some(e) = values.get("externalId") {
                                external = e.as_str().map(str::to_string);
                            }
                            if let Some(m) = values.get("members") {
                                let ids = member_ids(m)?;
                                if op == "replace" { replace = Some(ids) } else { add.extend(ids) }
                            }
                        }
                        (_, "displayname") if op != "remove" => name = group_name(Some(&value))?,
                        (_, "externalid") => {
                            external = if op == "remove" { None } else { value.as_str().map(str::to_string) }
                        }
                        ("add", "members") => add.extend(member_ids(&value)?),
                        ("replace", "members") => replace = Some(member_ids(&value)?),
                        ("remove", "members") if value.is_null() => replace = Some(vec![]),
                        ("remove", "members") => remove.extend(member_ids(&value)?),
                        ("remove", p) if p.starts_with("members[") => {
                            // members[value eq "id"]
                            let id = path
                                .split('"')
                                .nth(1)
                                .and_then(|v| Uuid::try_parse(v).ok())
                                .ok_or_else(|| ScimError::new(400, Some("invalidPath"), path.clone()))?;
                            remove.push(id);
                        }
                        _ => {
                            return Err(ScimError::new(
                                400,
                                Some("invalidPath"),
                                format!("{op} {path} is not supported on a group"),
                            ));
                        }
                    }
                }
                if name != group.display_name || external != group.external_id {
                    tx.update_directory_group(uuid, &name, external.as_deref()).await?;
                }
                tx.change_directory_members(uuid, replace.as_deref(), &add, &remove).await?;
                group_json(base, &tx.directory_group(uuid).await?.ok_or_else(missing)?)
            }
        };
        tx.commit().await?;
        self.tokens_changed(tenant).await;
        Ok(answer)
    }

    /// DELETE: a person is deprovisioned for good; a group goes, its members with it.
    pub async fn scim_delete(&self, tenant: Uuid, resource: Resource, id: &str) -> Result<(), ScimError> {
        let uuid = resource.id(id)?;
        let mut tx = self.store.begin(tenant).await?;
        let deleted = match resource {
            Resource::Users => tx.delete_directory_user(uuid).await?,
            Resource::Groups => tx.delete_directory_group(uuid).await?,
        };
        if !deleted {
            return Err(ScimError::not_found(resource.noun(), id));
        }
        tx.commit().await?;
        self.tokens_changed(tenant).await;
        Ok(())
    }
}

/// `GET /ServiceProviderConfig`.
pub fn service_provider_config(base: &str) -> ServiceProviderConfig {
    let no = || Supported { supported: false };
    ServiceProviderConfig {
        schemas: vec!["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig".into()],
        documentation_uri: format!("{base}/ServiceProviderConfig"),
        patch: Supported { supported: true },
        bulk: BulkSupport { supported: false, max_operations: 0, max_payload_size: 0 },
        filter: FilterSupport { supported: true, max_results: MAX_PAGE },
        change_password: no(),
        sort: no(),
        etag: no(),
        authentication_schemes: vec![AuthenticationScheme {
            kind: "oauthbearertoken".into(),
            name: "Bearer token".into(),
            description: "An obsidian-tc API token of the tenant with the admin:scim scope".into(),
            primary: true,
        }],
    }
}

/// `GET /ResourceTypes`.
pub fn resource_types(base: &str) -> ScimList<ResourceType> {
    let of = |id: &str, schema: &str| ResourceType {
        schemas: vec!["urn:ietf:params:scim:schemas:core:2.0:ResourceType".into()],
        id: id.into(),
        name: id.into(),
        endpoint: format!("/{id}s"),
        schema: schema.into(),
        meta: ScimMeta {
            resource_type: "ResourceType".into(),
            created: None,
            last_modified: None,
            location: format!("{base}/ResourceTypes/{id}"),
        },
    };
    list(vec![of("User", USER_SCHEMA), of("Group", GROUP_SCHEMA)], 2, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_the_eq_form_only() {
        assert_eq!(
            parse_filter(Some("userName eq \"a@b.test\""), "userName").unwrap(),
            DirectoryFilter::Name("a@b.test".into())
        );
        assert_eq!(
            parse_filter(Some("externalId EQ \"00u1\""), "userName").unwrap(),
            DirectoryFilter::ExternalId("00u1".into())
        );
        assert_eq!(parse_filter(None, "userName").unwrap(), DirectoryFilter::All);
        for bad in ["userName co \"a\"", "userName eq a", "emails eq \"x\"", "userName"] {
            assert!(parse_filter(Some(bad), "userName").is_err(), "{bad}");
        }
    }

    #[test]
    fn patches_take_the_shapes_okta_and_entra_send() {
        let mut user =
            json!({"userName": "a@b.test", "active": true, "name": {"givenName": "A"}}).as_object().unwrap().clone();
        // Okta
        patch_user(&mut user, "replace", None, json!({"active": false})).unwrap();
        assert_eq!(user["active"], false);
        // Entra: a string boolean, a filtered path, a sub-attribute
        patch_user(&mut user, "replace", Some("active"), json!("True")).unwrap();
        assert_eq!(boolean(&user["active"]), Some(true));
        patch_user(&mut user, "replace", Some("emails[type eq \"work\"].value"), json!("x@b.test")).unwrap();
        assert_eq!(user["emails"], json!([{"type": "work", "value": "x@b.test"}]));
        patch_user(&mut user, "replace", Some("name.familyName"), json!("B")).unwrap();
        patch_user(&mut user, "replace", Some("Active"), json!(false)).unwrap();
        assert_eq!(user["active"], false);
        patch_user(&mut user, "replace", None, json!({"ACTIVE": true})).unwrap();
        assert_eq!(user["active"], true);
        assert!(patch_user(&mut user, "remove", Some("active"), Value::Null).is_err());
        let created = canonical_keys(json!({"UserName": "x@y.test", "Active": false}).as_object().unwrap());
        assert!(!user_fields(&created).unwrap().active);
        assert_eq!(user["name"], json!({"givenName": "A", "familyName": "B"}));
        patch_user(&mut user, "remove", Some("name.givenName"), Value::Null).unwrap();
        assert_eq!(user["name"], json!({"familyName": "B"}));
        let fields = user_fields(&user).unwrap();
        assert_eq!(fields.email.as_deref(), Some("x@b.test"));
        assert!(fields.active);
    }
}
