/**
 * The application's identity, which every key it writes to a shared store
 * carries, so two applications sharing one Redis never read each other's
 * entries or dictionaries: the app script's path.
 */
export const appIdentity: string = process.argv[1] ?? '';
