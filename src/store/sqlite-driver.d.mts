import Database from 'better-sqlite3';
export default Database;
