/* Fixture: an internal header of gpu. */
