//! The messages of pprof's `profile.proto`, declared by hand for prost: only the fields
//! yieldprof writes, so no `protoc` is needed at build time.

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub(crate) sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub(crate) sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub(crate) mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub(crate) location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub(crate) function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub(crate) string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub(crate) time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub(crate) duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub(crate) period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub(crate) period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub(crate) comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub(crate) default_sample_type: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ValueType {
    #[prost(int64, tag = "1")]
    pub(crate) r#type: i64,
    #[prost(int64, tag = "2")]
    pub(crate) unit: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub(crate) location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub(crate) value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub(crate) label: Vec<Label>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Label {
    #[prost(int64, tag = "1")]
    pub(crate) key: i64,
    #[prost(int64, tag = "2")]
    pub(crate) str: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Mapping {
    #[prost(uint64, tag = "1")]
    pub(crate) id: u64,
    #[prost(int64, tag = "5")]
    pub(crate) filename: i64,
    #[prost(bool, tag = "7")]
    pub(crate) has_functions: bool,
    #[prost(bool, tag = "8")]
    pub(crate) has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub(crate) has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub(crate) has_inline_frames: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Location {
    #[prost(uint64, tag = "1")]
    pub(crate) id: u64,
    #[prost(uint64, tag = "2")]
    pub(crate) mapping_id: u64,
    /// One entry: yieldprof inlines nothing.
    #[prost(message, repeated, tag = "4")]
    pub(crate) line: Vec<Line>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Line {
    #[prost(uint64, tag = "1")]
    pub(crate) function_id: u64,
    #[prost(int64, tag = "2")]
    pub(crate) line: i64,
    #[prost(int64, tag = "3")]
    pub(crate) column: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Function {
    #[prost(uint64, tag = "1")]
    pub(crate) id: u64,
    #[prost(int64, tag = "2")]
    pub(crate) name: i64,
    #[prost(int64, tag = "3")]
    pub(crate) system_name: i64,
    #[prost(int64, tag = "4")]
    pub(crate) filename: i64,
    #[prost(int64, tag = "5")]
    pub(crate) start_line: i64,
}
