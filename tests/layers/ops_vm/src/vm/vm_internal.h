/* Fixture: an internal header of vm. */
