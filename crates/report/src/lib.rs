//! Exporters: tables, JSON, CSV and the other views of a Run
