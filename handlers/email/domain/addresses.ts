/**
 * Addresses as the service treats them: sent exactly as given (RFC 5321 §2.4: a local part may be
 * case-sensitive), but compared and suppressed on a normalised key (lowercase), as every mailbox
 * provider in practice treats them.
 */
export const addressKey = (address: string): string => address.trim().toLowerCase();

export const domainOf = (address: string): string => address.slice(address.lastIndexOf("@") + 1).toLowerCase();
