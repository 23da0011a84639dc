/// SQLite storage for Tokenet nodes.
enum TokenetStorageModule {}
